// Package workerdeployment owns the worker's place in its Temporal Worker Deployment (Worker
// Versioning): the version it registers, making a new release's version the current one, and
// moving the runs pinned to a version that is no longer current onto the current one.
//
// Every entity workflow is pinned to the version that started it, so a worker never replays a
// history that another build wrote. A run moves when it continues as new, which starts the next
// run on the current version: the workers of a version that is no longer current wake the runs
// still pinned to it with a resync {"Wake":true} (Keeper), on which the run continues as new
// (workflows/entity). They must run until their version has drained: no run is pinned to it any
// more.
//
// Workers that were killed before their version drained leave runs pinned to it that no worker
// takes: stranded. The current version's workers find them (Rescuer): a run stranded on an
// older version is moved onto the current one with an AutoUpgrade versioning override, since
// newer code replays older histories (every change goes behind workflow.GetVersion), and woken
// to continue as new there. A run pinned to a newer version (after a rollback) is only
// counted: older code cannot replay it.
package workerdeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/flowcontrol"
)

// rewake is how long a woken run may stay pinned to a version that is no longer current
// before it is woken again.
const rewake = time.Minute

// settleInterval is how often the deployment is read until the version is settled.
const settleInterval = 500 * time.Millisecond

// SignalResync is the signal every entity workflow takes as a resync; its next workflow task
// is where a pinned run learns of a new current version.
const SignalResync = "resync"

// wake is the payload of the resync that wakes a run to move it: every entity workflow then
// continues as new, on the current version (entity.IsWake).
var wake = map[string]bool{"Wake": true}

// Keeper promotes the worker's version and drains it once another version is current.
type Keeper struct {
	Client  client.Client
	Version worker.WorkerDeploymentVersion
	// Promote makes Version current when it was created after the current version last
	// changed: a new release, never an older build that restarts.
	Promote bool
	// Interval is how often the deployment's current version is read.
	Interval time.Duration
	// SignalsPerSecond bounds the resync signals of a drain.
	SignalsPerSecond float32
	Logger           *zap.Logger
	// Rescuer, when set, moves or counts the runs stranded on other versions while Version is
	// current.
	Rescuer *Rescuer

	mu sync.Mutex // one pass at a time: Run's, or Drained's while the worker stops
	// settled: the version was registered and the keeper decided about promoting it once.
	settled atomic.Bool
	// woken are the runs this keeper signalled, and when: a run still pinned a while later
	// (its task came before the server knew of the new version) is woken again.
	woken   map[string]time.Time
	current string
}

// Run reads the deployment until ctx is done, promoting and draining Version: every
// settleInterval until the version is registered and promoted (or found older), then every
// Interval.
func (k *Keeper) Run(ctx context.Context) {
	limiter := flowcontrol.NewTokenBucketRateLimiter(k.SignalsPerSecond, max(1, int(k.SignalsPerSecond)))
	pass := func(ctx context.Context) {
		if err := k.pass(ctx, limiter); err != nil && ctx.Err() == nil {
			k.Logger.Warn("worker deployment", zap.String("version", Name(k.Version)), zap.Error(err))
		}
	}
	_ = wait.PollUntilContextCancel(ctx, settleInterval, true, func(ctx context.Context) (bool, error) {
		pass(ctx)
		return k.settled.Load(), nil
	})
	wait.JitterUntilWithContext(ctx, pass, k.Interval, 0.2, true)
}

// Settled tells whether the version is registered and was promoted, or found not to be the
// newest: until then, with no current version, no task of a run reaches the worker.
func (k *Keeper) Settled() bool { return k.settled.Load() }

func (k *Keeper) pass(ctx context.Context, limiter flowcontrol.RateLimiter) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	handle := k.Client.WorkerDeploymentClient().GetHandle(k.Version.DeploymentName)
	described, err := handle.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil // no worker of the deployment polled yet
		}
		return fmt.Errorf("describing worker deployment %s: %w", k.Version.DeploymentName, err)
	}
	info := described.Info
	current := ""
	if v := info.RoutingConfig.CurrentVersion; v != nil {
		current = v.BuildID
	}
	if current == k.Version.BuildID {
		k.woken, k.current = nil, current
		k.settled.Store(true)
		return k.Rescuer.pass(ctx, k.Client, info, k.Version)
	}
	registered, newer := newer(info, k.Version.BuildID)
	if !registered {
		return nil // the next pass decides
	}
	if k.Promote && newer {
		if _, err := handle.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
			BuildID: k.Version.BuildID, ConflictToken: described.ConflictToken,
		}); err != nil {
			return fmt.Errorf("making %s the current version: %w", Name(k.Version), err)
		}
		k.Logger.Info("made this worker's version current", zap.String("version", Name(k.Version)),
			zap.String("previous", current))
		k.woken, k.current = nil, k.Version.BuildID
		k.settled.Store(true)
		return nil
	}
	k.settled.Store(true)
	if current != k.current || k.woken == nil {
		k.woken, k.current = map[string]time.Time{}, current
	}
	return k.drain(ctx, limiter)
}

// Drained waits, until ctx is done, for the version to drain when another one is current: no
// run pinned to it any more, each woken meanwhile. A worker stopping runs it before it stops
// polling, so that a rolling restart of the workers leaves no run without a worker of its
// version. It returns at once while the version is current.
func (k *Keeper) Drained(ctx context.Context) error {
	limiter := flowcontrol.NewTokenBucketRateLimiter(k.SignalsPerSecond, max(1, int(k.SignalsPerSecond)))
	return wait.PollUntilContextCancel(ctx, settleInterval, true, func(ctx context.Context) (bool, error) {
		if err := k.pass(ctx, limiter); err != nil {
			k.Logger.Warn("draining the worker's version", zap.String("version", Name(k.Version)), zap.Error(err))
			return false, nil
		}
		if k.isCurrent() {
			return true, nil
		}
		n, err := k.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: k.pinnedQuery()})
		if err != nil {
			return false, nil
		}
		return n.GetCount() == 0, nil
	})
}

func (k *Keeper) isCurrent() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.current == k.Version.BuildID
}

// pinnedQuery selects the running runs pinned to the version.
func (k *Keeper) pinnedQuery() string { return PinnedQuery(k.Version) }

// PinnedQuery is the visibility query of the running runs pinned to v.
func PinnedQuery(v worker.WorkerDeploymentVersion) string {
	return fmt.Sprintf("ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion IN (%s)", quoted(VersionStrings(v)))
}

// newer tells whether version buildID is registered in the deployment, and whether it was
// created after the deployment's current version last changed, or no version was ever current.
func newer(info client.WorkerDeploymentInfo, buildID string) (registered, newer bool) {
	for _, v := range info.VersionSummaries {
		if v.Version.BuildID == buildID {
			return true, info.RoutingConfig.CurrentVersionChangedTime.IsZero() ||
				v.CreateTime.After(info.RoutingConfig.CurrentVersionChangedTime)
		}
	}
	return false, false
}

// drain signals each running run pinned to Version once, so that it continues as new on the
// current version at its next workflow task.
func (k *Keeper) drain(ctx context.Context, limiter flowcontrol.RateLimiter) error {
	woken := 0
	err := eachPinnedRun(ctx, k.Client, k.Version, func(id, runID string) error {
		if at, ok := k.woken[runID]; ok && time.Since(at) < rewake {
			return nil
		}
		if err := limiter.Wait(ctx); err != nil {
			return err
		}
		// As the run itself says, not visibility: a wake goes only to a run whose next
		// workflow task this version's workers take, so that no other release ever reads one.
		// Visibility can still list a run that has just continued as new under its
		// predecessor's version, which an older release then runs.
		pinned, err := pinnedTo(ctx, k.Client, id, runID, k.Version)
		if err != nil || !pinned {
			return err
		}
		if err := wakeRun(ctx, k.Client, id, runID); err != nil {
			return err
		}
		k.woken[runID] = time.Now()
		woken++
		return nil
	})
	if woken > 0 {
		k.Logger.Info("woke the runs pinned to this worker's version, which is no longer current",
			zap.String("version", Name(k.Version)), zap.String("current", k.current), zap.Int("runs", woken))
	}
	return err
}

// wakeRun signals the run a resync {"Wake":true}: at its next workflow task it continues as
// new, on the deployment's current version. A run gone meanwhile is left alone.
func wakeRun(ctx context.Context, c client.Client, id, runID string) error {
	var notFound *serviceerror.NotFound
	if err := c.SignalWorkflow(ctx, id, runID, SignalResync, wake); err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("waking %s: %w", id, err)
	}
	return nil
}

// MinServerVersion is the oldest Temporal server the worker registers a version with: the
// first that starts a pinned run's continuation on the current version when the run asks for
// it (initial versioning behavior AutoUpgrade), and tells a pinned run of a new one. On an
// older server a pinned run would stay on its version for good.
const MinServerVersion = "1.32.0"

// Supported tells whether the Temporal server is at least MinServerVersion, and its version.
func Supported(ctx context.Context, c client.Client) (bool, string, error) {
	info, err := c.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
	if err != nil {
		return false, "", fmt.Errorf("asking the Temporal server its version: %w", err)
	}
	server := info.GetServerVersion()
	parsed, err := utilversion.ParseGeneric(server)
	if err != nil {
		return false, server, nil // unreadable: taken as older
	}
	return parsed.AtLeast(utilversion.MustParseGeneric(MinServerVersion)), server, nil
}

// Name is how Temporal names a version: "<deployment>:<build ID>".
func Name(v worker.WorkerDeploymentVersion) string { return v.DeploymentName + ":" + v.BuildID }

// VersionStrings are the values of the TemporalWorkerDeploymentVersion search attribute a run
// pinned to v may hold: servers since 1.32 join the names with ':', earlier ones with '.'.
func VersionStrings(v worker.WorkerDeploymentVersion) []string {
	return []string{Name(v), v.DeploymentName + "." + v.BuildID}
}

func quoted(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + strings.ReplaceAll(v, "'", "") + "'"
	}
	return strings.Join(q, ", ")
}
