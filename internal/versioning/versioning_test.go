package versioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/karmadaflow/karmadaflow/internal/versioning"
)

// counts answers CountWorkflow from a table of queries; any other query is an error.
type counts map[string]int64

func (c counts) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	n, ok := c[req.GetQuery()]
	if !ok {
		return nil, fmt.Errorf("unexpected query %s", req.GetQuery())
	}
	return &workflowservice.CountWorkflowExecutionsResponse{Count: n}, nil
}

// TestCountRunsDerivesDefaultVersion: the runs on DefaultVersion are the runs of the type less
// those with a version of the change, counted over every status and over running runs.
func TestCountRunsDerivesDefaultVersion(t *testing.T) {
	const running = " AND ExecutionStatus = 'Running'"
	visibility := counts{
		"WorkflowType = 'W'":                                                    10,
		"WorkflowType = 'W'" + running:                                          4,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'at-start-1'":           3,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'at-start-1'" + running: 1,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'at-start-2'":           7,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'at-start-2'" + running: 3,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'lazy-1'":               2,
		"WorkflowType = 'W' AND TemporalChangeVersion = 'lazy-1'" + running:     2,
	}
	runs, err := versioning.CountRuns(context.Background(), visibility, []versioning.Workflow{{Type: "W", Changes: []versioning.Change{
		{ID: "at-start", Max: 2, AtStart: true},
		{ID: "lazy", Max: 1},
	}}})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, versioning.Count{All: 10, Running: 4}, runs[0].Total)
	atStart, lazy := runs[0].Changes[0], runs[0].Changes[1]
	assert.Equal(t, []versioning.Count{{All: 3, Running: 1}, {All: 7, Running: 3}}, atStart.Versions)
	assert.Equal(t, versioning.Count{}, atStart.Default)
	assert.True(t, atStart.Retirable())
	assert.Equal(t, versioning.Count{All: 8, Running: 2}, lazy.Default)
	assert.False(t, lazy.Retirable())
}

func TestWriteTable(t *testing.T) {
	runs := []versioning.Runs{{
		Type:  "MultiClusterService",
		Total: versioning.Count{All: 14, Running: 3},
		Changes: []versioning.ChangeRuns{
			{Change: versioning.Change{ID: "jittered-resync", Max: 1, AtStart: true},
				Versions: []versioning.Count{{All: 14, Running: 3}}},
			{Change: versioning.Change{ID: "pull-clusters", Max: 1},
				Versions: []versioning.Count{{All: 2, Running: 1}}, Default: versioning.Count{All: 12, Running: 2}},
		},
	}, {
		Type:  "Karmada",
		Total: versioning.Count{All: 3},
		Changes: []versioning.ChangeRuns{
			{Change: versioning.Change{ID: "ordered-rollout", Max: 2},
				Versions: []versioning.Count{{All: 1}, {All: 2}}},
		},
	}}
	var out strings.Builder
	require.NoError(t, versioning.WriteTable(&out, "karmadaflow", 72*time.Hour, runs))
	assert.Equal(t, `Temporal namespace "karmadaflow": closed runs stay in visibility for 3 days (its retention).
A DefaultVersion branch is retirable when no run in visibility, running or closed, is on it.

MultiClusterService: 14 runs in visibility, 3 running
CHANGE           ASKED     VERSION         RUNS        RUNNING    RETIRABLE
jittered-resync  at start  DefaultVersion  0           0          yes
jittered-resync  at start  1               14          3
pull-clusters    lazily    DefaultVersion  at most 12  at most 2  no
pull-clusters    lazily    1               2           1

Karmada: 3 runs in visibility, 0 running
CHANGE           ASKED   VERSION         RUNS       RUNNING    RETIRABLE
ordered-rollout  lazily  DefaultVersion  at most 0  at most 0  yes
ordered-rollout  lazily  1               1          0
ordered-rollout  lazily  2               2          0
`, out.String())
}
