package mcs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// An activity ignores the workflow's moment of others' writes only when the workflow names
// this worker's Work cache as the one every write went through.
func TestOthersWroteBeforeIsMootOnlyForThisWorkersCache(t *testing.T) {
	a := &Activities{WorkCache: workcache.New(nil, workcache.MultiClusterServiceWorks)}
	other := workcache.New(nil, workcache.MultiClusterServiceWorks)
	moment := time.Unix(1000, 0)
	assert.NotEqual(t, a.WorkCache.Instance(), other.Instance(), "two caches are told apart")
	assert.True(t, a.othersWroteBefore(moment, a.WorkCache.Instance()).IsZero(), "this worker's cache")
	assert.Equal(t, moment, a.othersWroteBefore(moment, other.Instance()), "another worker's cache")
	assert.Equal(t, moment, a.othersWroteBefore(moment, ""), "no cache named")
	assert.Equal(t, moment, (&Activities{}).othersWroteBefore(moment, ""), "a worker without a cache")
}
