package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// RecordHistoriesEnv, set to 1, makes the end-to-end tests export the histories of the
// workflows they ran into test/replay/testdata (make replay-record).
const RecordHistoriesEnv = "KARMADAFLOW_RECORD_HISTORIES"

// recordHistory exports the history of workflowID as test/replay/testdata/<name>.json, when
// recording is asked for.
func recordHistory(t *testing.T, workflowID, name string) {
	t.Helper()
	if os.Getenv(RecordHistoriesEnv) != "1" {
		return
	}
	c, err := client.Dial(client.Options{HostPort: testEnv.Temporal.Address, Namespace: testEnv.Temporal.Namespace})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		require.NoError(t, err)
		history.Events = append(history.Events, event)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
	require.NoError(t, err)
	root, err := env.RepoRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "test", "replay", "testdata", name+".json")
	require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
	t.Logf("recorded %d events of %s into %s", len(history.Events), workflowID, path)
}
