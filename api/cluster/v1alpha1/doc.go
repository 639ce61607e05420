// Package v1alpha1 holds the cluster.karmada.io/v1alpha1 API that karmadaflow speaks:
// Cluster, a member cluster, wire-compatible with Karmada's type of the same name.
//
// In Karmada, Cluster is served by karmada-aggregated-apiserver, not by a CRD. The CRD
// generated from this package is for karmadaflow's standalone mode only and must never be
// installed beside a real Karmada.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.karmada.io
package v1alpha1
