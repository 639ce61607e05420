package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

func work(namespace, name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetResourceVersion(version)
	return u
}

func TestWorkBatchesGatherPerCluster(t *testing.T) {
	b := newWorkBatches()
	for _, obj := range []any{
		work("karmada-es-member2", "b", "1"),
		work("karmada-es-member2", "a", "2"),
		work("karmada-es-member2", "b", "3"),
		cache.DeletedFinalStateUnknown{Key: "karmada-es-member3/c", Obj: work("karmada-es-member3", "c", "4")},
	} {
		_, err := b.key(obj)
		assert.NoError(t, err)
	}
	key, err := b.key(work("default", "not-in-an-execution-namespace", "5"))
	assert.NoError(t, err)
	assert.Empty(t, key, "Works outside execution namespaces concern no cluster")

	names, versions := b.take("member2")
	assert.Equal(t, []string{"a", "b"}, names)
	assert.Equal(t, map[string]string{"a": "2", "b": "3"}, versions, "the latest version seen of each")
	assert.Equal(t, burstHold, b.holdAfter("member2"), "after a batch of several Works the next signal waits")
	names, _ = b.take("member2")
	assert.Empty(t, names, "taken once")

	_, err = b.key(work("karmada-es-member3", "c", "6"))
	assert.NoError(t, err)
	b.restore("member3", map[string]string{"c": "4", "d": "5"}) // a failed signal puts its Works back
	names, versions = b.take("member3")
	assert.Equal(t, []string{"c", "d"}, names)
	assert.Equal(t, map[string]string{"c": "6", "d": "5"}, versions, "a Work seen again since keeps its newer version")

	_, err = b.key(work("karmada-es-member3", "c", "7"))
	assert.NoError(t, err)
	names, _ = b.take("member3")
	assert.Equal(t, []string{"c"}, names)
	assert.Zero(t, b.holdAfter("member3"), "after a single Work the next signal goes at once")
}

func TestSuspendedWorksConcernExecutionOnlyWithItsFinalizer(t *testing.T) {
	b := newWorkBatches()
	collected := work("karmada-es-member2", "collected", "1")
	assert.NoError(t, unstructured.SetNestedField(collected.Object, true, "spec", "suspendDispatching"))
	key, err := b.key(collected)
	assert.NoError(t, err)
	assert.Empty(t, key, "a suspended Work without the execution finalizer is a record only")

	suspendedLater := collected.DeepCopy()
	suspendedLater.SetName("applied-then-suspended")
	suspendedLater.SetFinalizers([]string{naming.FinalizerExecution})
	key, err = b.key(suspendedLater)
	assert.NoError(t, err)
	assert.Equal(t, "member2", key, "applied before it was suspended: its deletion is execution's")

	names, _ := b.take("member2")
	assert.Equal(t, []string{"applied-then-suspended"}, names)
}

func TestWorkBatchesSendTwentyThousandWorksInBoundedSignals(t *testing.T) {
	b := newWorkBatches()
	for i := range 20_000 {
		prefix := fmt.Sprintf("work-%06d-", i)
		_, err := b.key(work("karmada-es-member2", prefix+strings.Repeat("x", 253-len(prefix)), "18446744073709551615"))
		require.NoError(t, err)
	}
	sent := map[string]int{}
	signals := 0
	refused := errors.New("refused")
	signal := func(names []string, versions map[string]string) error {
		signals++
		if signals == 3 {
			return refused // put back, with the Works not sent yet
		}
		payload, err := json.Marshal(execution.Change{Works: names, Versions: versions})
		require.NoError(t, err)
		assert.Less(t, len(payload), 512<<10, "a signal stays below Temporal's payload warning")
		assert.LessOrEqual(t, len(names), execution.MaxSignalWorks)
		assert.Len(t, versions, len(names))
		for _, name := range names {
			sent[name]++
		}
		return nil
	}
	require.ErrorIs(t, b.send("member2", signal), refused)
	assert.Equal(t, 2*execution.MaxSignalWorks, len(sent), "the signals before the refused one went")
	require.NoError(t, b.send("member2", signal), "the retry sends the rest at once")
	assert.Equal(t, 20_000, len(sent))
	for name, n := range sent {
		require.Equal(t, 1, n, "%s sent once", name[:12])
	}
	names, _ := b.take("member2")
	assert.Empty(t, names)
}
