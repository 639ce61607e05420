package mcs

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// FuzzSliceOfWork decodes the EndpointSlice of any collected Work (as JSON, the way the API
// server's answer is decoded): an error or a slice that makes the round trip a collected
// Work makes (recorded with collectedSliceManifest, decoded again) unchanged, and whose
// dispatched form keeps only the exposed ports and none of the provider's nodes or zones, and
// is of the MultiClusterService's namespace and Service whatever the Work says; a slice of any
// other is never accepted for dispatch.
func FuzzSliceOfWork(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work","metadata":{"name":"w","namespace":"karmada-es-m1"},"spec":{"workload":{"manifests":[{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"foo-abc","namespace":"demo","generation":2,"labels":{"kubernetes.io/service-name":"foo"}},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true},"nodeName":"n1","zone":"z","targetRef":{"kind":"Pod","name":"p"}}],"ports":[{"name":"http","port":80,"protocol":"TCP"},{"port":81}]}]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[{"kind":"EndpointSlice","addressType":"IPv6","endpoints":[],"ports":null}]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[{"kind":"EndpointSlice","endpoints":[{"addresses":"not a list"}]}]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[1]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[{},{}]}}}`,
	} {
		f.Add([]byte(seed), "member1", "http")
	}
	f.Fuzz(func(t *testing.T, data []byte, provider, portName string) {
		work := &unstructured.Unstructured{}
		if work.UnmarshalJSON(data) != nil {
			return
		}
		slice, err := sliceOfWork(work)
		if err != nil {
			return
		}
		again, err := sliceOfWork(newWork("w", "ns", nil, nil, false, collectedSliceManifest(slice)))
		if err != nil {
			t.Fatalf("a collected slice does not decode again: %v", err)
		}
		if again.Name != slice.Name || again.Namespace != slice.Namespace || again.AddressType != slice.AddressType ||
			!apiequality.Semantic.DeepEqual(again.Endpoints, slice.Endpoints) || !apiequality.Semantic.DeepEqual(again.Ports, slice.Ports) {
			t.Fatalf("the slice changes through a collected Work:\n%+v\n%+v", slice, again)
		}

		var dispatched discoveryv1.EndpointSlice
		portNames := []string{portName}
		if err := kube.FromUnstructured(&unstructured.Unstructured{Object: dispatchedSliceManifest(slice, Ref{Namespace: "demo", Name: "foo"}, provider, portNames)}, &dispatched); err != nil {
			t.Fatalf("a dispatched slice does not decode: %v", err)
		}
		if dispatched.Namespace != "demo" || dispatched.Labels[networkingv1alpha1.LabelServiceName] != "foo" {
			t.Fatalf("dispatched as %s/%s for Service %q, not for demo/foo", dispatched.Namespace, dispatched.Name, dispatched.Labels[networkingv1alpha1.LabelServiceName])
		}
		if accepted, dropped := collectedSlice(work, provider, Ref{Namespace: "demo", Name: "foo"}); dropped == nil &&
			(accepted.Namespace != "demo" || accepted.Labels[networkingv1alpha1.LabelServiceName] != "foo") {
			t.Fatalf("accepted a collected slice of %s/%s for Service %q", accepted.Namespace, accepted.Name, accepted.Labels[networkingv1alpha1.LabelServiceName])
		}
		if len(dispatched.Endpoints) != len(slice.Endpoints) {
			t.Fatalf("%d endpoints dispatched of %d", len(dispatched.Endpoints), len(slice.Endpoints))
		}
		for _, ep := range dispatched.Endpoints {
			if ep.NodeName != nil || ep.Zone != nil || ep.Hints != nil || ep.TargetRef != nil {
				t.Fatalf("a dispatched endpoint names the provider's node, zone or pod: %+v", ep)
			}
		}
		for _, p := range dispatched.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if !slices.Contains(portNames, name) {
				t.Fatalf("port %q dispatched, only %q exposed", name, portNames)
			}
		}
	})
}

// FuzzValidate: Validate of any MultiClusterService built of fuzzed names, types and ports
// never panics, leaves the object as it was, gives the same problems each time, each naming
// its field; one it accepts has a type, ports in range, and cluster names that are DNS labels
// of at most MaxClusterNameLength characters.
func FuzzValidate(f *testing.F) {
	f.Add("foo", "CrossCluster", "", int32(80), "http", int32(0), "", "member1", "member2", "", "", "")
	f.Add("Foo_1", "LoadBalancer", "CrossCluster", int32(0), "HTTP", int32(70000), "HTTP", "", strings.Repeat("m", 49), "r", "p", "c")
	f.Add("", "", "", int32(-1), "", int32(1), "", "a.b", "-x", "UPPER", "", "with space")
	f.Add("a", "CrossCluster", "CrossCluster", int32(443), "https", int32(443), "https", "m1", "m1", "m2", "m3", "m4")
	f.Fuzz(func(t *testing.T, name, type1, type2 string, port1 int32, portName1 string, port2 int32, portName2,
		provider, consumer, rangeName, provision, consumption string) {
		m := &networkingv1alpha1.MultiClusterService{}
		m.Name = name
		spec := &m.Spec
		for _, typ := range []string{type1, type2} {
			if typ != "" {
				spec.Types = append(spec.Types, networkingv1alpha1.ExposureType(typ))
			}
		}
		if port1 != 0 {
			spec.Ports = append(spec.Ports, networkingv1alpha1.ExposurePort{Port: port1, Name: portName1})
		}
		if port2 != 0 {
			spec.Ports = append(spec.Ports, networkingv1alpha1.ExposurePort{Port: port2, Name: portName2})
		}
		if provider != "" {
			spec.ProviderClusters = []networkingv1alpha1.ClusterSelector{{Name: provider}}
		}
		if consumer != "" {
			spec.ConsumerClusters = []networkingv1alpha1.ClusterSelector{{Name: consumer}}
		}
		if rangeName != "" {
			spec.Range = &networkingv1alpha1.ExposureRange{ClusterNames: []string{rangeName}}
		}
		if provision != "" {
			spec.ServiceProvisionClusters = []string{provision}
		}
		if consumption != "" {
			spec.ServiceConsumptionClusters = []string{consumption, provision}
		}

		before := m.DeepCopy()
		problems := Validate(m)
		if !reflect.DeepEqual(before, m) {
			t.Fatal("Validate changed the MultiClusterService")
		}
		if again := Validate(m); !slices.Equal(problems, again) {
			t.Fatalf("Validate differs: %q, then %q", problems, again)
		}
		for _, p := range problems {
			if !strings.HasPrefix(p, "metadata.name") && !strings.HasPrefix(p, "spec.") {
				t.Fatalf("problem %q names no field", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		if len(spec.Types) == 0 || len(validation.IsDNS1035Label(name)) > 0 {
			t.Fatalf("accepted without a type or with name %q", name)
		}
		for _, p := range spec.Ports {
			if p.Port < 1 || p.Port > 65535 {
				t.Fatalf("accepted port %d", p.Port)
			}
		}
		clusters := slices.Concat(spec.RangeClusters(), spec.ServiceProvisionClusters, spec.ServiceConsumptionClusters)
		for _, c := range slices.Concat(spec.ProviderClusters, spec.ConsumerClusters) {
			clusters = append(clusters, c.Name)
		}
		for _, c := range clusters {
			if c == "" || len(c) > MaxClusterNameLength || len(validation.IsDNS1123Label(c)) > 0 {
				t.Fatalf("accepted cluster name %q", c)
			}
		}
	})
}
