package workcache

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkWorkCacheFootprint measures the heap the cache's store holds per Work, for Works as
// the control plane serves them: kept whole ("served"), without managedFields (the cache's
// transform until managed fields alone went, "managedFields"), and as the transform holds them
// now ("held"):
//
//	go test -run '^$' -bench WorkCacheFootprint -benchtime 1x ./internal/workcache/
//
// Each Work is decoded from its JSON, as the informer decodes it, transformed, and added to an
// indexer with the cache's index; the heap is measured after a GC before and after. MiB/10k
// is what a namespace of 10,000 such Works costs.
func BenchmarkWorkCacheFootprint(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
		data func(i int) []byte
	}{
		{"deployment", 2000, deploymentWorkJSON},
		{"dispatched-slice", 2000, dispatchedWorkJSON},
		{"collected-100-endpoints", 200, func(i int) []byte { return collectedWorkJSON(i, 100) }},
		// As many small entries as etcd takes in one Work (1.5 MiB).
		{"padded-by-an-agent", 10, func(i int) []byte { return paddedWorkJSON(i, 120000) }},
	} {
		data := make([][]byte, tc.n)
		size := 0
		for i := range data {
			data[i] = tc.data(i)
			size += len(data[i])
		}
		for _, variant := range []struct {
			name      string
			transform cache.TransformFunc
		}{
			{"served", nil},
			{"managedFields", func(obj any) (any, error) {
				obj.(*unstructured.Unstructured).SetManagedFields(nil)
				return obj, nil
			}},
			{"held", held},
		} {
			b.Run(tc.name+"/"+variant.name, func(b *testing.B) {
				var perWork float64
				for range b.N {
					perWork = heapPerWork(b, data, storedBy(b, variant.transform))
				}
				b.ReportMetric(float64(size)/float64(tc.n), "JSON-B/Work")
				b.ReportMetric(perWork, "B/Work")
				b.ReportMetric(perWork*10000/(1<<20), "MiB/10k")
			})
		}
	}
}

// storedBy keeps a decoded Work as transform makes it, in an indexer with the cache's index.
func storedBy(b *testing.B, transform cache.TransformFunc) func(*unstructured.Unstructured) any {
	store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{byMCS: indexByMCS})
	return func(u *unstructured.Unstructured) any {
		var obj any = u
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				b.Fatal(err)
			}
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
		return store
	}
}

// BenchmarkHeld measures the transform's time per Work event (its trim and weighing), beside
// the decoding of the same Work the informer does before it:
//
//	go test -run '^$' -bench 'Held$' ./internal/workcache/
func BenchmarkHeld(b *testing.B) {
	for name, data := range map[string][]byte{
		"deployment":              deploymentWorkJSON(1),
		"dispatched-slice":        dispatchedWorkJSON(1),
		"collected-100-endpoints": collectedWorkJSON(1, 100),
		"padded-by-an-agent":      paddedWorkJSON(1, 120000),
	} {
		b.Run(name+"/decode", func(b *testing.B) {
			for range b.N {
				decoded(b, data)
			}
		})
		b.Run(name+"/held", func(b *testing.B) {
			works := make([]*unstructured.Unstructured, b.N)
			for i := range works {
				works[i] = decoded(b, data)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := held(works[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
