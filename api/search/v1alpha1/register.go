package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "search.karmada.io"

// GroupVersion is the group and version of this package.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Names of the ResourceRegistry resource.
const (
	KindResourceRegistry     = "ResourceRegistry"
	ResourceResourceRegistry = "resourceregistries"
)

// ResourceRegistryGVR is the group/version/resource of ResourceRegistry, for dynamic clients and informers.
var ResourceRegistryGVR = GroupVersion.WithResource(ResourceResourceRegistry)

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
	scheme.AddKnownTypes(GroupVersion, &ResourceRegistry{}, &ResourceRegistryList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// OpenAPIModelName names ResourceRegistry in the OpenAPI document of an API server serving it.
func (ResourceRegistry) OpenAPIModelName() string {
	return "io.karmada.search.v1alpha1.ResourceRegistry"
}

// OpenAPIModelName names ResourceRegistryList in the OpenAPI document of an API server serving it.
func (ResourceRegistryList) OpenAPIModelName() string {
	return "io.karmada.search.v1alpha1.ResourceRegistryList"
}
