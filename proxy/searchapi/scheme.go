// Package searchapi serves search.karmada.io/v1alpha1 as an API server of its own, to be
// registered behind karmada-apiserver's aggregator (APIService v1alpha1.search.karmada.io), as
// karmada-search is: ResourceRegistries, stored in etcd under the same keys karmada-search
// uses, and proxying/karmada/proxy, the global resource proxy, for callers whose identity the
// aggregator vouches for with its front-proxy headers.
package searchapi

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

var (
	// Scheme holds the served types, in search.karmada.io/v1alpha1 and, as the same Go types,
	// in the internal version the API server's handlers convert through.
	Scheme = runtime.NewScheme()
	// Codecs encode and decode the served types.
	Codecs = serializer.NewCodecFactory(Scheme)

	internalVersion = schema.GroupVersion{Group: searchv1alpha1.GroupName, Version: runtime.APIVersionInternal}
)

func init() {
	utilruntime.Must(searchv1alpha1.AddToScheme(Scheme))
	Scheme.AddKnownTypes(searchv1alpha1.GroupVersion, &ProxyOptions{})
	Scheme.AddKnownTypes(internalVersion, &searchv1alpha1.ResourceRegistry{}, &searchv1alpha1.ResourceRegistryList{}, &ProxyOptions{})
	utilruntime.Must(Scheme.AddConversionFunc((*url.Values)(nil), (*ProxyOptions)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*ProxyOptions).Path = a.(*url.Values).Get("path")
		return nil
	}))
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{},
		&metav1.APIResourceList{})
}

// ProxyOptions are the options of a request to proxying/karmada/proxy: the path below it,
// which the proxy reads from the request itself.
type ProxyOptions struct {
	metav1.TypeMeta `json:",inline"`
	Path            string `json:"path,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (o *ProxyOptions) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}
