package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/test/replay"
)

// recordHistory exports the history of workflowID as <name>.json into a new set of
// test/replay/testdata, when recording is asked for (make replay-record).
func recordHistory(t *testing.T, workflowID, name string) {
	t.Helper()
	recordRun(t, workflowID, "", name)
}

// recordRun is recordHistory for one run of workflowID (the current one when runID is empty).
func recordRun(t *testing.T, workflowID, runID, name string) {
	t.Helper()
	if !replay.Recording() {
		return
	}
	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := replay.RecordRun(ctx, c, workflowID, runID, name)
	require.NoError(t, err)
	t.Logf("recorded %d events of %s as %s", n, workflowID, name)
}
