package workerdeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
)

// StrandedRunsMetric is the gauge of runs stranded on a version other than the current one
// that the current version's workers cannot move: pinned to a newer version, after a rollback.
const StrandedRunsMetric = "karmadaflow_worker_stranded_runs"

// rescueInterval is how often the current version's workers look for stranded runs.
const rescueInterval = 30 * time.Second

// Rescuer finds the runs pinned to a version other than the current one for longer than
// After, when the workers of that version should have woken them long before: those workers
// are gone. Runs on an older version are moved to the current one; runs on a newer version
// are counted in the StrandedRunsMetric gauge, for an operator to start that version's workers
// again (or to move them by hand, at the risk the docs describe).
type Rescuer struct {
	// After is how long a run may stay pinned to another version before it counts as stranded:
	// well above what a drain takes (a wake, then the run's next workflow task).
	After    time.Duration
	stranded prometheus.Gauge
	Logger   *zap.Logger

	last time.Time
	// since is when each run (by run ID) was first seen pinned to another version.
	since map[string]time.Time
}

// NewRescuer registers the StrandedRunsMetric gauge with registry.
func NewRescuer(after time.Duration, registry prometheus.Registerer, logger *zap.Logger) (*Rescuer, error) {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: StrandedRunsMetric,
		Help: "Runs pinned to a newer worker deployment version than the current one for longer than the stranded threshold: no worker of their version runs, and this version's workers cannot replay them."})
	if err := registry.Register(gauge); err != nil {
		return nil, err
	}
	return &Rescuer{After: after, stranded: gauge, Logger: logger, since: map[string]time.Time{}}, nil
}

// pass looks for stranded runs at most every rescueInterval, while current is the current
// version of the deployment info describes. A nil Rescuer does nothing.
func (r *Rescuer) pass(ctx context.Context, c client.Client, info client.WorkerDeploymentInfo, current worker.WorkerDeploymentVersion) error {
	if r == nil || time.Since(r.last) < rescueInterval {
		return nil
	}
	r.last = time.Now()
	var currentCreated time.Time
	for _, v := range info.VersionSummaries {
		if v.Version.BuildID == current.BuildID {
			currentCreated = v.CreateTime
		}
	}
	seen := map[string]bool{}
	stranded, moved := 0, 0
	var errs []error
	for _, v := range info.VersionSummaries {
		if v.Version.BuildID == current.BuildID || v.DrainageStatus == client.WorkerDeploymentVersionDrainageStatusDrained {
			continue
		}
		older := v.CreateTime.Before(currentCreated)
		version := worker.WorkerDeploymentVersion{DeploymentName: v.Version.DeploymentName, BuildID: v.Version.BuildID}
		err := eachPinnedRun(ctx, c, version, func(id, runID string) error {
			seen[runID] = true
			first, ok := r.since[runID]
			if !ok {
				r.since[runID] = time.Now()
				return nil
			}
			if time.Since(first) < r.After {
				return nil
			}
			if !older {
				stranded++
				return nil
			}
			done, err := moveToCurrent(ctx, c, id, runID, version)
			if err != nil || !done {
				return err
			}
			moved++
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	for runID := range r.since {
		if !seen[runID] {
			delete(r.since, runID)
		}
	}
	r.stranded.Set(float64(stranded))
	if moved > 0 {
		r.Logger.Info("moved runs stranded on an older version, whose workers are gone, to the current version",
			zap.String("current", Name(current)), zap.Int("runs", moved))
	}
	if stranded > 0 {
		r.Logger.Warn("runs are stranded on a newer version than the current one, whose workers are gone: start that version's workers again",
			zap.String("current", Name(current)), zap.Int("runs", stranded))
	}
	return errors.Join(errs...)
}

// moveToCurrent moves a run still pinned to the older version v onto the deployment's current
// version: an AutoUpgrade override sends its next workflow task there, and a wake gives it one,
// where it continues as new, as a drained run does. moved is false for a run no longer pinned
// to v, or gone.
func moveToCurrent(ctx context.Context, c client.Client, id, runID string, v worker.WorkerDeploymentVersion) (moved bool, err error) {
	pinned, err := pinnedTo(ctx, c, id, runID, v)
	if err != nil || !pinned {
		return false, err
	}
	_, err = c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{WorkflowId: id, RunId: runID,
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{
			VersioningOverride: &client.VersioningOverrideChange{Value: &client.AutoUpgradeVersioningOverride{}},
		}})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("moving %s off version %s: %w", id, Name(v), err)
	}
	return true, wakeRun(ctx, c, id, runID)
}

// eachPinnedRun calls fn for each running run that visibility lists as pinned to v.
func eachPinnedRun(ctx context.Context, c client.Client, v worker.WorkerDeploymentVersion, fn func(id, runID string) error) error {
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: PinnedQuery(v), NextPageToken: token})
		if err != nil {
			return fmt.Errorf("listing the runs pinned to %s: %w", Name(v), err)
		}
		for _, run := range page.GetExecutions() {
			if err := fn(run.GetExecution().GetWorkflowId(), run.GetExecution().GetRunId()); err != nil {
				return err
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// pinnedTo tells whether the run is running and pinned to v, as the run itself says, with no
// override; a run gone meanwhile is not.
func pinnedTo(ctx context.Context, c client.Client, id, runID string, v worker.WorkerDeploymentVersion) (bool, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, runID)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describing %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	versioning := info.GetVersioningInfo()
	return info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
		versioning.GetBehavior() == enumspb.VERSIONING_BEHAVIOR_PINNED && versioning.GetVersioningOverride() == nil &&
		versioning.GetDeploymentVersion().GetDeploymentName() == v.DeploymentName &&
		versioning.GetDeploymentVersion().GetBuildId() == v.BuildID, nil
}
