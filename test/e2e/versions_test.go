package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestVersionsCountsRunningWorkflowsPerChange: `worker versions` counts the runs of the
// MultiClusterService workflow type per version of its changes. The workflow of a new
// MultiClusterService runs on version 1 of jittered-resync, which every run asks at its start,
// so the type has a running run with jittered-resync-1 and no running run on DefaultVersion.
func TestVersionsCountsRunningWorkflowsPerChange(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	runningRuns(t, dialTemporal(t), mcs.WorkflowID(ns, app))

	defaultRow := regexp.MustCompile(`(?m)^jittered-resync +at start +DefaultVersion +(\d+) +(\d+) +(yes|no)$`)
	versionRow := regexp.MustCompile(`(?m)^jittered-resync +at start +1 +(\d+) +(\d+)$`)
	var table string
	// Visibility is eventually consistent: the run and its marker show a moment after it ran.
	eventually(t, 30*time.Second, func() error {
		out, err := workerVersions(t)
		if err != nil {
			return err
		}
		table = workflowTypeTable(out, mcs.WorkflowName)
		onDefault, onVersion := defaultRow.FindStringSubmatch(table), versionRow.FindStringSubmatch(table)
		if onDefault == nil || onVersion == nil {
			return fmt.Errorf("no jittered-resync rows for %s in:\n%s", mcs.WorkflowName, out)
		}
		if running, _ := strconv.Atoi(onVersion[2]); running < 1 {
			return fmt.Errorf("no running run with jittered-resync-1:\n%s", table)
		}
		// Running runs only: closed runs of earlier tests stay in visibility, and one closed
		// before its first task (none does today) would hold the branch until the retention.
		if onDefault[2] != "0" {
			return fmt.Errorf("running runs on the DefaultVersion branch of jittered-resync:\n%s", table)
		}
		return nil
	})
	t.Logf("worker versions, %s:\n%s", mcs.WorkflowName, table)
}

// workerVersions runs `worker versions` against the environment's namespace and returns what
// it prints (the table; its logs go to stderr).
func workerVersions(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, _ := workerCommand(t, ctx, testEnv.Temporal.Namespace, "versions")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("worker versions: %w\n%s", err, stderr.String())
	}
	return string(out), nil
}

// workflowTypeTable is the table of workflowType in the output of `worker versions`: from the
// line naming the type to the blank line after its rows.
func workflowTypeTable(out, workflowType string) string {
	for block := range strings.SplitSeq(out, "\n\n") {
		if strings.HasPrefix(block, workflowType+": ") {
			return block
		}
	}
	return ""
}
