package searchapi

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// FuzzRegistryValidate validates any ResourceRegistry (as JSON, the way a request's body is
// decoded) by the CRD's schema: never a panic, the object left as it was, the same errors
// each time and on update; one accepted selects resources by apiVersion and kind.
func FuzzRegistryValidate(f *testing.F) {
	schema, err := loadRegistrySchema()
	if err != nil {
		f.Fatal(err)
	}
	strategy := registryStrategy{ObjectTyper: Scheme, NameGenerator: names.SimpleNameGenerator, schema: schema}
	for _, seed := range []string{
		`{"metadata":{"name":"pods"},"spec":{"targetCluster":{"clusterNames":["member1"]},"resourceSelectors":[{"apiVersion":"v1","kind":"Pod"}]}}`,
		`{"metadata":{"name":"p"},"spec":{"targetCluster":{"labelSelector":{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"Bogus"}]},"fieldSelector":{"matchExpressions":[{"key":"provider","operator":"In","values":["x"]}]},"exclude":["m2"]},"resourceSelectors":[{"apiVersion":"","kind":"Pod","namespace":"n"}]}}`,
		`{"spec":{"resourceSelectors":[{"apiVersion":"apps/v1"}]},"status":{"conditions":[{"type":"Ready","status":"Maybe","reason":"","message":"m","lastTransitionTime":"2020-01-01T00:00:00Z"}]}}`,
		`{"spec":{}}`,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		registry := &searchv1alpha1.ResourceRegistry{}
		if json.Unmarshal(data, registry) != nil {
			return
		}
		before := registry.DeepCopy()
		errs := strategy.Validate(ctx, registry)
		if !reflect.DeepEqual(before, registry) {
			t.Fatal("Validate changed the registry")
		}
		if again := strategy.ValidateUpdate(ctx, registry, before); !slices.Equal(sortedErrors(errs), sortedErrors(again)) {
			t.Fatalf("Validate and ValidateUpdate differ: %v, then %v", errs, again)
		}
		if len(errs) > 0 {
			return
		}
		for i, s := range registry.Spec.ResourceSelectors {
			if s.APIVersion == "" || s.Kind == "" {
				t.Fatalf("selector %d accepted without apiVersion or kind: %+v", i, s)
			}
		}
	})
}

// sortedErrors are the messages of errs, sorted: the schema's validator need not report in
// one order.
func sortedErrors(errs field.ErrorList) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	slices.Sort(out)
	return out
}
