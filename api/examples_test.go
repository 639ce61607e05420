// Package api_test checks the API packages under api/ (one per group, cluster, networking,
// operator, search and work) together: the generated CRDs of deploy/crds against their types,
// and the example objects of testdata/ decoded strictly into the types and encoded again
// without losing a field. It holds no type of its own.
package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/karmadaflow/karmadaflow/api/cluster/v1alpha1"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
)

// scheme holds every type of the api packages.
func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clusterv1alpha1.AddToScheme,
		networkingv1alpha1.AddToScheme,
		operatorv1alpha1.AddToScheme,
		searchv1alpha1.AddToScheme,
		workv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatalf("add to scheme: %v", err)
		}
	}
	return s
}

// TestExamplesRoundTrip decodes every example in testdata strictly (an unknown or duplicate
// field fails) into its typed object and checks that encoding it again keeps every field.
func TestExamplesRoundTrip(t *testing.T) {
	s := scheme(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(data, &meta); err != nil {
				t.Fatalf("read apiVersion and kind: %v", err)
			}
			gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
			obj, err := s.New(gvk)
			if err != nil {
				t.Fatalf("%s is not a type of the api packages: %v", gvk, err)
			}

			if err := yaml.UnmarshalStrict(data, obj); err != nil {
				t.Fatalf("strict decode into %T: %v", obj, err)
			}
			if !equality.Semantic.DeepEqual(obj, obj.DeepCopyObject()) {
				t.Errorf("DeepCopyObject of %T differs from the original", obj)
			}

			encoded, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("encode %T: %v", obj, err)
			}
			original, err := yaml.YAMLToJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(original, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(encoded, &got); err != nil {
				t.Fatal(err)
			}
			for _, problem := range compare("", want, got) {
				t.Error(problem)
			}
		})
	}
}

// compare reports every difference between the original document want and the re-encoded
// got: a field lost or changed, or a field added with a value. Fields the encoder adds empty
// (null, {} or [], as Go encodes zero structs and metadata.creationTimestamp) are allowed.
func compare(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var problems []string
		for _, key := range sortedKeys(w) {
			gv, ok := g[key]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s.%s: lost (was %v)", path, key, w[key]))
				continue
			}
			problems = append(problems, compare(path+"."+key, w[key], gv)...)
		}
		for _, key := range sortedKeys(g) {
			if _, ok := w[key]; !ok && !empty(g[key]) {
				problems = append(problems, fmt.Sprintf("%s.%s: added %v", path, key, g[key]))
			}
		}
		return problems
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, w, got)}
		}
		var problems []string
		for i := range w {
			problems = append(problems, compare(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return problems
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

// empty reports whether v carries no value: null, or objects and lists of only empty values.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !empty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	default:
		return false
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestStrictDecodingRejectsUnknownFields makes sure the round trip above would notice a field
// the types do not have.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	doc := []byte(`
apiVersion: networking.karmada.io/v1alpha1
kind: MultiClusterService
metadata:
  name: foo
spec:
  types: [CrossCluster]
  notAField: true
`)
	var mcs networkingv1alpha1.MultiClusterService
	if err := yaml.UnmarshalStrict(doc, &mcs); err == nil {
		t.Fatal("strict decoding accepted spec.notAField")
	}
}

// TestAPIServerServiceJSONName pins the status field name the provisioning spec requires
// (the seed's apiServerServiceStatus is overridden by upstream's apiServerService).
func TestAPIServerServiceJSONName(t *testing.T) {
	status := operatorv1alpha1.KarmadaStatus{
		APIServerService: &operatorv1alpha1.APIServerServiceStatus{Name: "demo-karmada-apiserver", Port: 5443},
	}
	data, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["apiServerService"]; !ok {
		t.Fatalf("KarmadaStatus encodes as %s, want the field apiServerService", data)
	}
}

// TestGroupVersionResources pins the wire names clients use.
func TestGroupVersionResources(t *testing.T) {
	for _, tc := range []struct {
		got  schema.GroupVersionResource
		want string
	}{
		{networkingv1alpha1.MultiClusterServiceGVR, "networking.karmada.io/v1alpha1, Resource=multiclusterservices"},
		{workv1alpha1.WorkGVR, "work.karmada.io/v1alpha1, Resource=works"},
		{clusterv1alpha1.ClusterGVR, "cluster.karmada.io/v1alpha1, Resource=clusters"},
		{searchv1alpha1.ResourceRegistryGVR, "search.karmada.io/v1alpha1, Resource=resourceregistries"},
		{operatorv1alpha1.KarmadaGVR, "operator.karmada.io/v1alpha1, Resource=karmadas"},
	} {
		if tc.got.String() != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

// TestCompareReportsDifferences makes sure the round trip above notices a lost, changed or
// added field, and tolerates only empty additions.
func TestCompareReportsDifferences(t *testing.T) {
	want := map[string]any{"spec": map[string]any{"a": "x", "b": []any{1.0, 2.0}, "c": map[string]any{}}}
	for _, tc := range []struct {
		name     string
		got      any
		problems int
	}{
		{"equal", map[string]any{"spec": map[string]any{"a": "x", "b": []any{1.0, 2.0}, "c": map[string]any{}}}, 0},
		{"empty additions", map[string]any{"spec": map[string]any{"a": "x", "b": []any{1.0, 2.0}, "c": map[string]any{}, "d": nil, "e": map[string]any{"f": []any{}}}}, 0},
		{"lost", map[string]any{"spec": map[string]any{"a": "x", "b": []any{1.0, 2.0}}}, 1},
		{"changed", map[string]any{"spec": map[string]any{"a": "y", "b": []any{1.0}, "c": map[string]any{}}}, 2},
		{"added", map[string]any{"spec": map[string]any{"a": "x", "b": []any{1.0, 2.0}, "c": map[string]any{}, "d": false}}, 1},
	} {
		if got := compare("", want, tc.got); len(got) != tc.problems {
			t.Errorf("%s: got problems %q, want %d", tc.name, got, tc.problems)
		}
	}
}
