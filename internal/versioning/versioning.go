// Package versioning owns the rule for retiring a workflow.GetVersion branch and what applies
// it: the Change each workflow package registers for every change ID it versions, the count of
// a workflow type's runs in visibility per version of each change (`worker versions`), and the
// table that shows them.
//
// The rule: a branch may be removed when no run of that workflow type within the namespace's
// retention is on it, running or closed (visibility keeps closed runs until the retention
// passes). The SDK adds "<changeID>-<version>" to the run's TemporalChangeVersion search
// attribute when the run records a version marker; the DefaultVersion branch records none, so
// the runs on it are the runs of the type less those holding a version of the change.
package versioning

import (
	"context"
	"fmt"

	"go.temporal.io/api/workflowservice/v1"
)

// Change is one change ID a workflow type passes to workflow.GetVersion.
type Change struct {
	ID string
	// Max is the newest version, the maxSupported of the GetVersion call.
	Max int
	// AtStart: every run asks for the version in its first workflow task, so a run without a
	// marker of the change is on DefaultVersion. A change asked only when needed (a Pull
	// cluster, a resync that asks for it) is missing from the runs that did not need it yet,
	// so for it the runs without a marker only bound those on DefaultVersion.
	AtStart bool
}

// Workflow is a workflow type and the changes it versions.
type Workflow struct {
	Type    string
	Changes []Change
}

// Count is a number of runs in visibility: All, whatever their status, and those Running.
type Count struct {
	All     int64
	Running int64
}

// Runs are the runs of one workflow type in visibility, in total and per change.
type Runs struct {
	Type    string
	Total   Count
	Changes []ChangeRuns
}

// ChangeRuns are the runs of a workflow type per version of one change.
type ChangeRuns struct {
	Change Change
	// Versions[v-1] are the runs that recorded version v (1 to Change.Max).
	Versions []Count
	// Default are the runs without a marker of the change: those on DefaultVersion, or at most
	// those when the change is not asked at start.
	Default Count
}

// Retirable tells whether the DefaultVersion branch of the change may be removed: no run in
// visibility, running or closed, is (or may be) on it.
func (c ChangeRuns) Retirable() bool { return c.Default.All == 0 }

// ChangeVersion is the value the SDK adds to TemporalChangeVersion when a run records version
// of change id.
func ChangeVersion(id string, version int) string { return fmt.Sprintf("%s-%d", id, version) }

// Counter counts the runs a visibility query matches; client.Client is one.
type Counter interface {
	CountWorkflow(ctx context.Context, request *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
}

// CountRuns counts the runs of each workflow type in the client's namespace, per version of
// each of its changes.
func CountRuns(ctx context.Context, c Counter, workflows []Workflow) ([]Runs, error) {
	var all []Runs
	for _, w := range workflows {
		runs, err := countType(ctx, c, w)
		if err != nil {
			return nil, err
		}
		all = append(all, runs)
	}
	return all, nil
}

func countType(ctx context.Context, c Counter, w Workflow) (Runs, error) {
	runs := Runs{Type: w.Type}
	for _, change := range w.Changes {
		versions := make([]Count, change.Max)
		for v := 1; v <= change.Max; v++ {
			count, err := countQuery(ctx, c, fmt.Sprintf("WorkflowType = '%s' AND TemporalChangeVersion = '%s'", w.Type, ChangeVersion(change.ID, v)))
			if err != nil {
				return Runs{}, err
			}
			versions[v-1] = count
		}
		runs.Changes = append(runs.Changes, ChangeRuns{Change: change, Versions: versions})
	}
	// The total last: a run started while the versions were counted (a continued run, say)
	// then counts as one without a marker, which errs on the side of keeping a branch.
	total, err := countQuery(ctx, c, fmt.Sprintf("WorkflowType = '%s'", w.Type))
	if err != nil {
		return Runs{}, err
	}
	runs.Total = total
	for i := range runs.Changes {
		runs.Changes[i].Default = withoutMarker(total, runs.Changes[i].Versions)
	}
	return runs, nil
}

// countQuery counts the runs query matches, and those of them running.
func countQuery(ctx context.Context, c Counter, query string) (Count, error) {
	all, err := countWorkflows(ctx, c, query)
	if err != nil {
		return Count{}, err
	}
	running, err := countWorkflows(ctx, c, query+" AND ExecutionStatus = 'Running'")
	if err != nil {
		return Count{}, err
	}
	return Count{All: all, Running: running}, nil
}

func countWorkflows(ctx context.Context, c Counter, query string) (int64, error) {
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return 0, fmt.Errorf("counting workflows %s: %w", query, err)
	}
	return resp.GetCount(), nil
}

// withoutMarker is total less the runs of every version. Counts taken a moment apart can
// disagree (a run that ended in between), so it is never below zero.
func withoutMarker(total Count, versions []Count) Count {
	rest := total
	for _, v := range versions {
		rest.All -= v.All
		rest.Running -= v.Running
	}
	return Count{All: max(rest.All, 0), Running: max(rest.Running, 0)}
}
