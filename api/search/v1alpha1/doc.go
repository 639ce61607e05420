// Package v1alpha1 holds the search.karmada.io/v1alpha1 API that karmadaflow speaks:
// ResourceRegistry, which selects the member-cluster resources the global resource proxy
// serves, wire-compatible with Karmada's type of the same name.
//
// In Karmada, search.karmada.io is served by karmada-search, not by a CRD. The CRD generated
// from this package is for karmadaflow's standalone mode only.
//
// +kubebuilder:object:generate=true
// +groupName=search.karmada.io
package v1alpha1
