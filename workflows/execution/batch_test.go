package execution

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

// longWorkNames are n distinct Work names of the longest length Kubernetes allows (253).
func longWorkNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		prefix := fmt.Sprintf("work-%06d-", i)
		names[i] = prefix + strings.Repeat("x", 253-len(prefix))
	}
	return names
}

// changesOf splits names into signals of at most MaxSignalWorks, as the starter sends them,
// each with a resourceVersion of the longest usual length.
func changesOf(names []string) []Change {
	var out []Change
	for start := 0; start < len(names); start += MaxSignalWorks {
		c := Change{Works: names[start:min(start+MaxSignalWorks, len(names))], Versions: map[string]string{}}
		for _, name := range c.Works {
			c.Versions[name] = "18446744073709551615"
		}
		out = append(out, c)
	}
	return out
}

// signalBudget is how large one change signal may grow: a quarter of Temporal's 2 MB payload
// limit, below its 512 KB warning.
const signalBudget = 512 << 10

func TestTwentyThousandWorksAreSignalledInBoundedBatchesAndEachAppliedOnce(t *testing.T) {
	names := longWorkNames(20_000)
	changes := changesOf(names)
	for _, c := range changes {
		payload, err := json.Marshal(c)
		require.NoError(t, err)
		require.Less(t, len(payload), signalBudget, "one signal of %d Works", len(c.Works))
	}

	a := &applier{}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() {
		for _, c := range changes {
			env.SignalWorkflow(SignalChange, c)
		}
	}, time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(WorkExecution, Input{Cluster: "member2"})

	applied := map[string]int{}
	for _, batch := range a.named() {
		assert.LessOrEqual(t, len(batch), BatchSize)
		for _, name := range batch {
			applied[name]++
		}
	}
	assert.Equal(t, len(names), len(applied))
	for _, name := range names {
		if applied[name] != 1 {
			t.Fatalf("%s applied %d times, want once", name[:12], applied[name])
		}
	}
}

func TestContinueAsNewCarriesNoMoreWorksThanOnePayloadHolds(t *testing.T) {
	a := &applier{fullDelay: 2 * time.Second}
	env := newEnv(t, a)
	env.RegisterDelayedCallback(func() {
		for _, c := range changesOf(longWorkNames(20_000)) {
			env.SignalWorkflow(SignalChange, c)
		}
		env.SetContinueAsNewSuggested(true)
	}, time.Second)
	env.ExecuteWorkflow(WorkExecution, Input{Cluster: "member1"})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Empty(t, next.Pending, "the new run's full pass applies them")
}

// BenchmarkRecordTwentyThousandNames measures what the workflow does with the names of 20,000
// changed Works arriving in bounded signals: gathering them once each, and keeping the failed
// Works that the round did not retry.
func BenchmarkRecordTwentyThousandNames(b *testing.B) {
	names := longWorkNames(20_000)
	changes := changesOf(names)
	for b.Loop() {
		pending := newWorkNames(nil)
		for _, c := range changes {
			pending.add(c.names())
		}
		waiting := slices.DeleteFunc(slices.Clone(names), func(name string) bool { return pending.has[name] })
		_ = addNames(pending.list, waiting)
	}
}
