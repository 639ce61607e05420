package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// RecordEnv, set to 1, makes end-to-end tests export the histories of the workflows they ran
// into test/replay/testdata (make replay-record).
const RecordEnv = "KARMADAFLOW_RECORD_HISTORIES"

// Recording tells whether histories are to be recorded.
func Recording() bool { return os.Getenv(RecordEnv) == "1" }

// Record exports the history of the current run of workflowID into
// test/replay/testdata/<name>.json and returns the number of events.
func Record(ctx context.Context, c client.Client, workflowID, name string) (int, error) {
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if err != nil {
			return 0, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		history.Events = append(history.Events, event)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
	if err != nil {
		return 0, err
	}
	root, err := env.RepoRoot()
	if err != nil {
		return 0, err
	}
	path := filepath.Join(root, "test", "replay", "testdata", name+".json")
	return len(history.Events), os.WriteFile(path, append(data, '\n'), 0o644)
}
