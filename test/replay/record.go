// Package replay owns the recorded workflow histories under testdata/: the end-to-end tests
// record them from the real flow (make replay-record, Record), and its test replays every one
// against the current workflow code, so that a change that alters the command sequence of a
// recorded run without workflow.GetVersion fails.
package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// RecordEnv, set to 1, makes end-to-end tests export the histories of the workflows they ran
// into a new set under test/replay/testdata (make replay-record).
const RecordEnv = "KARMADAFLOW_RECORD_HISTORIES"

// RecordSetEnv names the set, a subdirectory of test/replay/testdata, that a recording adds
// (make replay-record: the date and the commit recorded from). Unset, it is the date and time.
const RecordSetEnv = "KARMADAFLOW_RECORD_SET"

// Recording tells whether histories are to be recorded.
func Recording() bool { return os.Getenv(RecordEnv) == "1" }

// Record exports the history of the current run of workflowID into
// test/replay/testdata/<set>/<name>.json and returns the number of events. Recorded histories
// are never overwritten: a file that exists already is an error.
func Record(ctx context.Context, c client.Client, workflowID, name string) (int, error) {
	return RecordRun(ctx, c, workflowID, "", name)
}

// RecordRun is Record for one run of workflowID (the current one when runID is empty).
func RecordRun(ctx context.Context, c client.Client, workflowID, runID, name string) (int, error) {
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	set := os.Getenv(RecordSetEnv)
	if set == "" {
		set = time.Now().UTC().Format("20060102-150405")
	}
	dir := filepath.Join(root, "test", "replay", "testdata", set)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("recording %s: %w", workflowID, err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return 0, err
	}
	return len(history.Events), f.Close()
}
