package ensure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

func ids(starts []trigger.Start) []string {
	out := []string{}
	for _, s := range starts {
		out = append(out, s.WorkflowID)
	}
	return out
}

func starts(workflowIDs ...string) []trigger.Start {
	var out []trigger.Start
	for _, id := range workflowIDs {
		out = append(out, trigger.Start{WorkflowID: id})
	}
	return out
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wanted  []trigger.Start
		running []string
		want    []string
	}{
		{"nothing wanted", nil, []string{"mcs/a/x"}, []string{}},
		{"all running", starts("mcs/a/x", "mcs/a/y"), []string{"mcs/a/y", "mcs/a/x"}, []string{}},
		{"none running", starts("mcs/b/z", "mcs/a/x"), nil, []string{"mcs/a/x", "mcs/b/z"}},
		{"some running", starts("mcs/a/x", "mcs/a/y", "mcs/a/z"), []string{"mcs/a/y"}, []string{"mcs/a/x", "mcs/a/z"}},
		{"running but not wanted (object gone) is left alone", starts("mcs/a/x"), []string{"mcs/a/gone"}, []string{"mcs/a/x"}},
		{"wanted twice is started once", starts("cluster/m1", "cluster/m1"), nil, []string{"cluster/m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := map[string]bool{}
			for _, id := range tc.running {
				running[id] = true
			}
			assert.Equal(t, tc.want, ids(Missing(tc.wanted, running)))
		})
	}
}

func TestMissingKeepsTheStart(t *testing.T) {
	wanted := []trigger.Start{{WorkflowID: "mcs/a/x", Workflow: "MultiClusterService", Signal: "change", TaskQueue: "karmadaflow"}}
	assert.Equal(t, wanted, Missing(wanted, nil))
}

func TestQuery(t *testing.T) {
	assert.Equal(t, `WorkflowType='MultiClusterService' AND TaskQueue IN ('karmadaflow') AND ExecutionStatus='Running'`,
		Query("MultiClusterService", "karmadaflow"))
	assert.Equal(t, `WorkflowType='MultiClusterService' AND TaskQueue IN ('karmadaflow', 'karmadaflow-mcs') AND ExecutionStatus='Running'`,
		Query("MultiClusterService", "karmadaflow", "karmadaflow-mcs"))
}

// fakeTemporal lists no running workflow and records the starts and the queries.
type fakeTemporal struct {
	client.Client
	queries, started []string
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.queries = append(f.queries, req.GetQuery())
	return &workflowservice.ListWorkflowExecutionsResponse{}, nil
}

func (f *fakeTemporal) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.started = append(f.started, o.ID+"@"+o.TaskQueue)
	return nil, nil
}

func (f *fakeTemporal) SignalWorkflow(context.Context, string, string, string, any) error { return nil }

// A pass starts the missing workflows of a kind only while a worker polls the kind's task
// queue, and counts runs on the base queue and on the kind's own as running.
func TestPassStartsOnlyOnPolledQueues(t *testing.T) {
	polled := false
	fake := &fakeTemporal{}
	kind := Kind{Name: "MultiClusterService", WorkflowType: "MultiClusterService", TaskQueue: "karmadaflow-mcs",
		Wanted: func() []trigger.Start {
			return []trigger.Start{{WorkflowID: "mcs/a/x", Workflow: "MultiClusterService", TaskQueue: "karmadaflow-mcs"}}
		}}
	e := New(Config{Temporal: fake, TaskQueue: "karmadaflow", Kinds: []Kind{kind}, Period: time.Second,
		Polled: func(_ context.Context, queue string) (bool, error) {
			assert.Equal(t, "karmadaflow-mcs", queue)
			return polled, nil
		}})

	r := e.Pass(context.Background(), ReasonStartup)[0]
	require.NoError(t, r.Err)
	assert.True(t, r.Unpolled)
	assert.Equal(t, 1, r.Missing)
	assert.Empty(t, fake.started, "no worker polls the queue")
	assert.Equal(t, []string{Query("MultiClusterService", "karmadaflow", "karmadaflow-mcs")}, fake.queries)

	polled = true
	r = e.Pass(context.Background(), ReasonNotRunning)[0]
	require.NoError(t, r.Err)
	assert.False(t, r.Unpolled)
	assert.Equal(t, 1, r.Started)
	assert.Equal(t, []string{"mcs/a/x@karmadaflow-mcs"}, fake.started)
}

func TestFailedPassesAreWarningsUntilTheyRepeat(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	e := New(Config{Logger: zap.New(core)})
	failed := Report{Kind: "MultiClusterService", Err: errors.New("context deadline exceeded")}
	levels := func() []zapcore.Level {
		var out []zapcore.Level
		for _, entry := range logs.TakeAll() {
			out = append(out, entry.Level)
		}
		return out
	}

	e.log(failed)
	e.log(Report{Kind: "Cluster", Err: errors.New("another kind's failure")})
	e.log(failed)
	assert.Equal(t, []zapcore.Level{zapcore.WarnLevel, zapcore.WarnLevel, zapcore.WarnLevel}, levels(), "two failed passes in a row")
	e.log(failed)
	e.log(failed)
	assert.Equal(t, []zapcore.Level{zapcore.ErrorLevel, zapcore.ErrorLevel}, levels(), "the third and later failed passes in a row")
	e.log(Report{Kind: "MultiClusterService"})
	e.log(failed)
	assert.Equal(t, []zapcore.Level{zapcore.DebugLevel, zapcore.WarnLevel}, levels(), "a pass that succeeded starts the count again")
}
