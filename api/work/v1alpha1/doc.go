// Package v1alpha1 holds the work.karmada.io/v1alpha1 API that karmadaflow speaks: Work,
// the manifests to apply to one member cluster, wire-compatible with Karmada's type of the
// same name.
//
// +kubebuilder:object:generate=true
// +groupName=work.karmada.io
package v1alpha1
