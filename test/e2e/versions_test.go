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
// so the type has a running run with jittered-resync-1, and its versions add up to its runs.
func TestVersionsCountsRunningWorkflowsPerChange(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	runningRuns(t, dialTemporal(t), mcs.WorkflowID(ns, app))

	header := regexp.MustCompile(`(?m)^` + mcs.WorkflowName + `: (\d+) runs in visibility, (\d+) running$`)
	defaultRow := regexp.MustCompile(`(?m)^jittered-resync +at start +DefaultVersion +(\d+) +(\d+) +(yes|no)$`)
	versionRow := regexp.MustCompile(`(?m)^jittered-resync +at start +1 +(\d+) +(\d+)$`)
	var table string
	// Visibility is eventually consistent: the run and its marker show a moment after it ran.
	// Runs that earlier tests left in the namespace count too, so the rows are checked against
	// the type's totals rather than against this test's one run.
	eventually(t, 30*time.Second, func() error {
		out, err := workerVersions(t)
		if err != nil {
			return err
		}
		table = workflowTypeTable(out, mcs.WorkflowName)
		totals, onDefault, onVersion := header.FindStringSubmatch(table), defaultRow.FindStringSubmatch(table), versionRow.FindStringSubmatch(table)
		if totals == nil || onDefault == nil || onVersion == nil {
			return fmt.Errorf("no totals or jittered-resync rows for %s in:\n%s", mcs.WorkflowName, out)
		}
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		if n(onVersion[2]) < 1 {
			return fmt.Errorf("no running run with jittered-resync-1:\n%s", table)
		}
		// A change asked at start: every run is on version 1 or on DefaultVersion.
		if n(onDefault[1])+n(onVersion[1]) != n(totals[1]) || n(onDefault[2])+n(onVersion[2]) != n(totals[2]) {
			return fmt.Errorf("the versions of jittered-resync do not add up to the runs of the type:\n%s", table)
		}
		if retirable := n(onDefault[1]) == 0; retirable != (onDefault[3] == "yes") {
			return fmt.Errorf("retirable says %s with %s runs on DefaultVersion:\n%s", onDefault[3], onDefault[1], table)
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
