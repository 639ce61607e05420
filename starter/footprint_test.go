package main

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// BenchmarkInformerStoreFootprint measures the heap an informer's store holds for 2,000
// objects as the API servers serve them, stored in full (as before the transforms) and
// trimmed by the informer's transform:
//
//	go test -run '^$' -bench InformerStoreFootprint -benchtime 1x ./starter/
//
// Each object is decoded from its JSON, as the informer decodes it, transformed, and added to
// an indexer with the informer's indexes; the heap is measured after a GC before and after.
func BenchmarkInformerStoreFootprint(b *testing.B) {
	const n = 2000
	works := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, worksByMCS: indexWorksByMCS}
	namespaced := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	for _, tc := range []struct {
		name      string
		data      func(i int) []byte
		decode    func([]byte) any
		transform cache.TransformFunc
		indexers  cache.Indexers
	}{
		{"Works-of-Karmada-Deployments", func(i int) []byte { return karmadaWorkJSON(i, "member1") },
			func(d []byte) any { return decodeUnstructured(d) }, transformWork, works},
		{"Works-dispatched-slices", dispatchedWorkJSON, func(d []byte) any { return decodeUnstructured(d) }, transformWork, works},
		{"Services", serviceJSON, func(d []byte) any { return decodeService(d) }, transformService, namespaced},
		{"member-EndpointSlices", memberSliceJSON, func(d []byte) any { return decodeEndpointSlice(d) }, transformEndpointSlice, namespaced},
		{"Karmadas-provisioned", func(i int) []byte { return provisionedKarmadaJSON(fmt.Sprintf("karmada-%d", i)) },
			func(d []byte) any { return decodeUnstructured(d) }, transformKarmada, namespaced},
	} {
		data := make([][]byte, n)
		for i := range data {
			data[i] = tc.data(i)
		}
		for _, variant := range []struct {
			name      string
			transform cache.TransformFunc
		}{{"full", nil}, {"trimmed", tc.transform}} {
			b.Run(tc.name+"/"+variant.name, func(b *testing.B) {
				var held uint64
				for range b.N {
					held = storeFootprint(b, data, tc.decode, variant.transform, tc.indexers)
				}
				b.ReportMetric(float64(held)/n, "B/object")
				b.ReportMetric(float64(held)/(1<<20), "MiB/2000")
			})
		}
	}
}

// storeFootprint is the heap that an indexer filled with the decoded (and transformed)
// objects holds.
func storeFootprint(b *testing.B, data [][]byte, decode func([]byte) any, transform cache.TransformFunc, indexers cache.Indexers) uint64 {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
	for _, d := range data {
		obj := decode(d)
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				b.Fatal(err)
			}
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(store)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}
