package workcache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
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

func TestAListHidesTheWorksDeletedBeforeIt(t *testing.T) {
	listed := map[string]bool{"a/listed": true}
	withRole := func(u *unstructured.Unstructured, role string) *unstructured.Unstructured {
		u.SetLabels(map[string]string{naming.LabelWorkRole: role})
		return u
	}
	roles := []string{naming.RoleDispatched}
	assert.True(t, goneBeforeList(withRole(work("a", "deleted", "5"), naming.RoleDispatched), listed, roles, 10), "not listed, older than the list")
	assert.False(t, goneBeforeList(withRole(work("a", "listed", "5"), naming.RoleDispatched), listed, roles, 10), "listed")
	assert.False(t, goneBeforeList(withRole(work("a", "created", "11"), naming.RoleDispatched), listed, roles, 10), "written after the list")
	assert.False(t, goneBeforeList(withRole(work("a", "service", "5"), naming.RoleService), listed, roles, 10), "a role the list did not ask for")
	assert.True(t, goneBeforeList(withRole(work("a", "service", "5"), naming.RoleService), listed, nil, 10), "a list of every role")
	assert.False(t, goneBeforeList(withRole(work("a", "opaque", "x"), naming.RoleDispatched), listed, roles, 10), "a version that is not a number")
}

// TestAListServesTheReconcilesOfTheSameMoment: a list made for the moment a workflow gave
// answers for the same moment and the roles listed, never for another moment, another role
// or another MultiClusterService.
func TestAListServesTheReconcilesOfTheSameMoment(t *testing.T) {
	c := &Cache{listedFor: map[string]map[string]listing{}}
	moment := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	assert.False(t, c.ListedFor("ns", "foo", []string{naming.RoleService}, moment), "nothing listed yet")

	c.recordListing("ns/foo", []string{naming.RoleService, naming.RoleDispatched}, moment)
	assert.True(t, c.ListedFor("ns", "foo", []string{naming.RoleService}, moment))
	assert.True(t, c.ListedFor("ns", "foo", []string{naming.RoleDispatched, naming.RoleService}, moment))
	assert.False(t, c.ListedFor("ns", "foo", []string{naming.RoleService, naming.RoleCollected}, moment), "a role not listed")
	assert.False(t, c.ListedFor("ns", "foo", nil, moment), "every role, of which some were not listed")
	assert.False(t, c.ListedFor("ns", "foo", []string{naming.RoleService}, moment.Add(time.Millisecond)), "another moment: another worker ran a reconcile since")
	assert.False(t, c.ListedFor("ns", "bar", []string{naming.RoleService}, moment), "another MultiClusterService")
	assert.False(t, c.ListedFor("ns", "foo", []string{naming.RoleService}, time.Time{}), "no moment: nothing to answer for")

	c.recordListing("ns/foo", nil, moment.Add(time.Second))
	assert.True(t, c.ListedFor("ns", "foo", []string{naming.RoleCollected}, moment.Add(time.Second)), "a list of every role")
	assert.True(t, c.ListedFor("ns", "foo", nil, moment.Add(time.Second)))
	var none *Cache
	assert.False(t, none.ListedFor("ns", "foo", nil, moment), "no cache")
}
