// Package v1alpha1 holds the operator.karmada.io/v1alpha1 API that karmadaflow speaks:
// Karmada, a declaratively installed Karmada control plane, wire-compatible with the
// Karmada operator's type of the same name, plus the API server Service status and the
// API server sidecar containers of the operator's later proposals.
//
// +kubebuilder:object:generate=true
// +groupName=operator.karmada.io
package v1alpha1
