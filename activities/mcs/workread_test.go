package mcs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// An activity ignores the workflow's moment of others' writes only when the workflow names
// this worker's Work cache as the one every write went through.
func TestOthersWroteBeforeIsMootOnlyForThisWorkersCache(t *testing.T) {
	a := &Activities{WorkCache: workcache.New(nil, workcache.MultiClusterServiceWorks)}
	other := workcache.New(nil, workcache.MultiClusterServiceWorks)
	moment := time.Unix(1000, 0)
	assert.NotEqual(t, a.WorkCache.Instance(), other.Instance(), "two caches are told apart")
	said := func(cache string) EarlierWrites { return EarlierWrites{OthersWroteBefore: moment, WorkCache: cache} }
	assert.True(t, a.othersWroteBefore(said(a.WorkCache.Instance())).IsZero(), "this worker's cache")
	assert.Equal(t, moment, a.othersWroteBefore(said(other.Instance())), "another worker's cache")
	assert.Equal(t, moment, a.othersWroteBefore(said("")), "no cache named")
	assert.Equal(t, moment, (&Activities{}).othersWroteBefore(said("")), "a worker without a cache")
}

// The inputs that embed EarlierWrites carry its fields at their top level, as before it was
// a type of its own: histories and workers of either form read each other's inputs.
func TestEarlierWritesAreFlatOnTheWire(t *testing.T) {
	flat := `{"MCS":{"Namespace":"ns","Name":"foo"},"Consumer":"member2","Providers":null,"Exclusive":false,"Ports":null,` +
		`"DetectedAt":"0001-01-01T00:00:00Z","OthersWroteBefore":"2026-11-27T10:00:00Z","WorkCache":"abc123"}`
	var in DispatchInput
	require.NoError(t, json.Unmarshal([]byte(flat), &in))
	assert.Equal(t, time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), in.OthersWroteBefore)
	assert.Equal(t, "abc123", in.WorkCache)
	out, err := json.Marshal(in)
	require.NoError(t, err)
	assert.JSONEq(t, flat, string(out))
}
