package execution

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzManifestsOf decodes the manifests of any Work (as JSON, the way the API server's
// answer is decoded): an error or manifests that each have an apiVersion, a kind and a name,
// one per entry of spec.workload.manifests, the same again after the Work makes a round trip
// through JSON; stamping one for the Work keeps what it is and marks it as the Work's.
func FuzzManifestsOf(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work","metadata":{"name":"w","namespace":"karmada-es-m1","uid":"u1","generation":3},"spec":{"workload":{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"d","labels":{"a":"b"}},"data":{"k":"v"}}]}}}`,
		`{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","annotations":{"x":1}}},{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n","labels":null},"spec":{"replicas":1.5}}]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":["not an object"]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":[{"kind":"ConfigMap","metadata":{"name":"c"}}]}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":{"manifests":{}}}}`,
		`{"kind":"Work","metadata":{"name":"w"},"spec":{"workload":null}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		work := &unstructured.Unstructured{}
		if work.UnmarshalJSON(data) != nil {
			return
		}
		raw, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
		manifests, err := manifestsOf(work)
		if err != nil {
			return
		}
		if len(manifests) != len(raw) {
			t.Fatalf("%d manifests of %d", len(manifests), len(raw))
		}
		// Round trips: the first may turn numbers written as 1.0 into integers; from then on
		// the Work, and so its manifests, stay as they are.
		once, twice := roundTrip(t, work), roundTrip(t, roundTrip(t, work))
		m1, err1 := manifestsOf(once)
		m2, err2 := manifestsOf(twice)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(m1, m2) || len(m1) != len(manifests) {
			t.Fatalf("manifests change through JSON: %v, %v", err1, err2)
		}
		work.SetUID(types.UID("uid-1"))
		work.SetGeneration(7)
		for i, m := range manifests {
			if m.GetAPIVersion() == "" || m.GetKind() == "" || m.GetName() == "" {
				t.Fatalf("manifest %d without apiVersion, kind or name: %v", i, m.Object)
			}
			before := m.DeepCopy()
			s := stamped(m, work, nil)
			if !reflect.DeepEqual(before, m) {
				t.Fatalf("stamping changed manifest %d", i)
			}
			if s.GetAPIVersion() != m.GetAPIVersion() || s.GetKind() != m.GetKind() || s.GetName() != m.GetName() || s.GetNamespace() != m.GetNamespace() {
				t.Fatalf("stamped manifest %d is another object: %v", i, s.Object)
			}
			if uid, generation := appliedFrom(s); !ownedBy(s, work) || uid != "uid-1" || generation != 7 {
				t.Fatalf("stamped manifest %d is not marked as the Work's: %v", i, s.Object)
			}
			if s.GetResourceVersion() != "" {
				t.Fatalf("stamped manifest %d, new, has resourceVersion %q", i, s.GetResourceVersion())
			}
		}
	})
}

func roundTrip(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatalf("marshalling %v: %v", u.Object, err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatalf("%s does not decode again: %v", data, err)
	}
	return out
}
