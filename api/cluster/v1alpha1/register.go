package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "cluster.karmada.io"

// GroupVersion is the group and version of this package.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Names of the Cluster resource.
const (
	KindCluster     = "Cluster"
	ResourceCluster = "clusters"
)

// ClusterGVR is the group/version/resource of Cluster, for dynamic clients and informers.
var ClusterGVR = GroupVersion.WithResource(ResourceCluster)

var (
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind returns a GroupKind of this group.
func Kind(kind string) schema.GroupKind { return GroupVersion.WithKind(kind).GroupKind() }

// Resource returns a GroupResource of this group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Cluster{}, &ClusterList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
