package replay

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// histories are the recorded histories of every set: the first ones directly in testdata,
// each later recording in a subdirectory of its own.
func histories(t *testing.T) []string {
	var files []string
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata; run make replay-record")
	return files
}

func TestReplayRecordedHistories(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	mcs.RegisterWorkflow(replayer)
	execution.RegisterWorkflow(replayer)
	clusterhealth.RegisterWorkflow(replayer)
	provisioning.RegisterWorkflow(replayer)
	for _, file := range histories(t) {
		t.Run(strings.TrimPrefix(file, "testdata"+string(filepath.Separator)), func(t *testing.T) {
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}

// TestReplayDetectsUnguardedChange shows the replay test can fail: the MultiClusterService
// workflow with one extra local activity up front, not behind GetVersion, does not replay.
func TestReplayDetectsUnguardedChange(t *testing.T) {
	changed := func(ctx workflow.Context, in mcs.Input) error {
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 1e9})
		if err := workflow.ExecuteLocalActivity(ctx, func(context.Context) error { return nil }).Get(ctx, nil); err != nil {
			return err
		}
		return mcs.MultiClusterService(ctx, in)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: mcs.WorkflowName})
	replayed := 0
	for _, file := range histories(t) {
		if !strings.HasPrefix(filepath.Base(file), "mcs-") {
			continue
		}
		err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, file)
		require.Error(t, err, "%s replayed against a changed workflow", file)
		require.Contains(t, err.Error(), "TMPRL1100", "a non-determinism error")
		replayed++
	}
	require.NotZero(t, replayed, "no MultiClusterService history recorded")
}
