package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// historyOf is what the latest run of a MultiClusterService workflow received and did after
// event eventID: its change signals by kind, and its completed workflow tasks.
type historyOf struct {
	lastEventID int64
	changes     []mcs.ChangeKind
	tasks       int
	// localActivities are the types of the local activities it ran, in order.
	localActivities []string
}

func mcsHistory(t *testing.T, workflowID string, after int64) historyOf {
	t.Helper()
	h := historyOf{lastEventID: after}
	for _, event := range history(t, workflowID) {
		if event.GetEventId() <= after {
			continue
		}
		h.lastEventID = event.GetEventId()
		if event.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			h.tasks++
		}
		if marker := event.GetMarkerRecordedEventAttributes(); marker.GetMarkerName() == "LocalActivity" {
			var data struct{ ActivityType string }
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(marker.GetDetails()["data"], &data))
			h.localActivities = append(h.localActivities, data.ActivityType)
		}
		signal := event.GetWorkflowExecutionSignaledEventAttributes()
		if signal == nil || signal.GetSignalName() != mcs.SignalChange {
			continue
		}
		var change mcs.Change
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(signal.GetInput(), &change))
		h.changes = append(h.changes, change.Kind)
	}
	return h
}

// TestSliceChangeTakesOneWorkflowTask: once a MultiClusterService is settled, a change of the
// provider's slice reaches the consumer within the workflow tasks its slice signals start, in
// one activity that collects and dispatches: the worker applies the dispatched Work as it writes it, so Work execution is never signalled for
// it, and its turning Applied agrees with the condition already written, so no signal about
// the Works' state follows. The condition stays True throughout.
func TestSliceChangeTakesOneWorkflowTask(t *testing.T) {
	ns, m1, m2 := exposeToMember2(t)
	id := mcs.WorkflowID(ns, app)
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "True")

	// Settled: nothing arrives for longer than the starter's coalescing and grace.
	var settled historyOf
	eventually(t, 60*time.Second, func() error {
		before := mcsHistory(t, id, 0)
		time.Sleep(7 * time.Second)
		if now := mcsHistory(t, id, 0); now.lastEventID != before.lastEventID {
			return fmt.Errorf("the workflow is still busy: history grew from %d to %d events", before.lastEventID, now.lastEventID)
		}
		settled = before
		return nil
	})
	executionBefore := len(signalledWorks(t, execution.WorkflowID(m2)))

	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	time.Sleep(7 * time.Second) // past the starter's coalescing (1 s) and execution's grace (5 s)

	after := mcsHistory(t, id, settled.lastEventID)
	t.Logf("after the scale: signals %v, %d workflow tasks", after.changes, after.tasks)
	require.NotEmpty(t, after.changes, "the slice change was not signalled")
	for _, kind := range after.changes {
		assert.Equal(t, mcs.ChangeEndpointSlices, kind, "only slice changes are signalled; a %q signal is the Applied tail", kind)
	}
	assert.LessOrEqual(t, after.tasks, len(after.changes), "more workflow tasks than signals")
	t.Logf("local activities: %v", after.localActivities)
	assert.Contains(t, after.localActivities, "CollectAndDispatch", "the change is collected and dispatched in one activity")
	assert.NotContains(t, after.localActivities, "CollectEndpointSlices")
	assert.NotContains(t, after.localActivities, "DispatchEndpointSlices")

	works, err := worksOf(ns, app)
	require.NoError(t, err)
	signalled := signalledWorks(t, execution.WorkflowID(m2))[executionBefore:]
	for _, w := range works {
		namespace, name, _ := strings.Cut(w, "/")
		if namespace == naming.ExecutionNamespace(m2) {
			assert.NotContains(t, signalled, name, "Work execution was signalled for %s, which the worker applied as it wrote it", w)
		}
	}
	object, err := getMCS(ns, app)
	require.NoError(t, err)
	for _, c := range object.Status.Conditions {
		if c.Type == networkingv1alpha1.ConditionEndpointSliceApplied {
			assert.Equal(t, "True", string(c.Status), "EndpointSliceApplied: %s", c.Message)
			assert.Equal(t, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess, c.Reason)
		}
	}
}
