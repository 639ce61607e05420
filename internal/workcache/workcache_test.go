package workcache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func work(namespace, name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func names(works []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, w := range works {
		out[w.GetNamespace()+"/"+w.GetName()] = w.GetResourceVersion()
	}
	return out
}

func TestWithWritesShowsWhatThisProcessWrote(t *testing.T) {
	cached := []*unstructured.Unstructured{work("a", "kept", "5"), work("a", "updated", "6"), work("b", "deleted", "7")}
	awaiting := map[string]expectation{
		"a/updated": {rv: 10, written: work("a", "updated", "10")},
		"b/deleted": {rv: 7, deleted: true},
		"b/created": {rv: 11, written: work("b", "created", "11")},
	}
	assert.Equal(t, map[string]string{"a/kept": "5", "a/updated": "10", "b/created": "11"}, names(withWrites(cached, awaiting)))
	assert.Len(t, cached, 3, "the cache's own list is not modified")
}

func TestWithWritesNothingAwaited(t *testing.T) {
	cached := []*unstructured.Unstructured{work("a", "kept", "5")}
	assert.Equal(t, map[string]string{"a/kept": "5"}, names(withWrites(cached, nil)))
}

func TestLaggingWatchSendsReadsToTheAPIServer(t *testing.T) {
	now := time.Now()
	assert.False(t, lagging(map[string]expectation{"a/w": {at: now.Add(-time.Second)}}, now))
	assert.True(t, lagging(map[string]expectation{"a/w": {at: now.Add(-time.Second)}, "a/x": {at: now.Add(-MaxWait - time.Millisecond)}}, now))
}
