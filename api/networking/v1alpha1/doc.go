// Package v1alpha1 holds the networking.karmada.io/v1alpha1 API that karmadaflow speaks:
// MultiClusterService, wire-compatible with Karmada's type of the same name, with the
// validation karmadaflow enforces in its CRD and the condition, finalizer, label and
// annotation names it shares with Karmada.
//
// +kubebuilder:object:generate=true
// +groupName=networking.karmada.io
package v1alpha1
