// Package ensure keeps the starter level-triggered: at start and every period it lists, per
// workflow type, the running workflows with one paged visibility query, compares them with the
// objects the informers hold and starts the workflow of every object that has none. Signals
// make workflows react fast; this makes them exist, whatever happened meanwhile: a lost Temporal
// database, an operator's terminate, a workflow that ended by a bug, an event that was missed.
package ensure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// Reasons a workflow was started because none was running, the reason label of the metric.
const (
	// ReasonStartup: the first pass after the starter (or its leadership) began found none; the
	// object changed, or its workflow ended, while no starter was running.
	ReasonStartup = "startup"
	// ReasonNotRunning: a later pass found none; it was terminated, ended by a bug, or lost
	// with Temporal's database.
	ReasonNotRunning = "not-running"
	// ReasonSignal: a trigger's signal to an object that exists found none.
	ReasonSignal = "signal"
)

// Defaults of Config.
const (
	// DefaultPageSize is the page size of the visibility query; the server caps it (1,000 by
	// default), so a pass over n workflows costs n/1,000 pages.
	DefaultPageSize = 1000
	// DefaultStarts is how many missing workflows are started at once.
	DefaultStarts = 8
)

// Kind is one workflow type the starter owns, one workflow per object.
type Kind struct {
	// Name names the kind in logs and in the metric's kind label, e.g. "MultiClusterService".
	Name string
	// WorkflowType is the registered name of the kind's workflow.
	WorkflowType string
	// TaskQueue is the task queue the kind's workflows are started on (its capability's).
	TaskQueue string
	// Wanted returns the start of the workflow of every object that must have one running,
	// read from the informer's store. Its signal is what a running workflow receives if it was
	// started after the visibility query (visibility lags the start by a moment).
	Wanted func() []trigger.Start
}

// Config configures an Ensurer.
type Config struct {
	Temporal client.Client
	// TaskQueue is the base task queue: a kind's workflows count as running on it too (runs
	// started there before each capability had its own queue, until they continue as new),
	// besides on the kind's own; workflows of other queues do not.
	TaskQueue string
	Kinds     []Kind
	// Polled reports whether a worker polls a task queue: the missing workflows of a kind
	// whose queue has none are not started, until a later pass finds one. Nil: always.
	Polled func(ctx context.Context, taskQueue string) (bool, error)
	// Period between the end of one pass and the start of the next.
	Period time.Duration
	// PageSize of the visibility query; 0 means DefaultPageSize.
	PageSize int
	// Started counts the workflows started because none was running (NewStartedCounter).
	Started *prometheus.CounterVec
	Logger  *zap.Logger
}

// failedPassesBeforeError: a failed pass of a kind is logged as a warning, as one visibility
// query that timed out on a busy Temporal is, since the next pass retries it; once this many
// passes in a row failed, as an error.
const failedPassesBeforeError = 3

// Ensurer runs the passes.
type Ensurer struct {
	cfg Config
	// failedPasses counts each kind's failed passes in a row, for the logs; only Run uses it.
	failedPasses map[string]int
}

// New returns an Ensurer; call Run.
func New(cfg Config) *Ensurer {
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Ensurer{cfg: cfg, failedPasses: map[string]int{}}
}

// NewStartedCounter registers karmadaflow_workflows_started_total{kind,reason}.
func NewStartedCounter(registerer prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karmadaflow_workflows_started_total",
		Help: "Workflows the starter started because none was running, by kind and reason (startup, not-running, signal).",
	}, []string{"kind", "reason"})
	return c, registerer.Register(c)
}

// Report is what one pass found for one kind.
type Report struct {
	Kind      string
	TaskQueue string
	Wanted    int // objects that must have a running workflow
	Running   int // running workflows the visibility query listed
	Missing   int // wanted and not listed
	Started   int // missing and not running when asked (the others had just started)
	// Unpolled: no worker polls the kind's task queue, so the missing were not started.
	Unpolled bool
	Pages    int // visibility query pages
	// List is how long the visibility query took; Pass how long the whole pass of the kind.
	List, Pass time.Duration
	Err        error
}

// Run runs a pass at once and then Period after the end of each, until ctx ends.
func (e *Ensurer) Run(ctx context.Context) {
	reason := ReasonStartup
	for {
		for _, r := range e.Pass(ctx, reason) {
			e.log(r)
		}
		reason = ReasonNotRunning
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.cfg.Period):
		}
	}
}

func (e *Ensurer) log(r Report) {
	fields := []zap.Field{zap.String("kind", r.Kind), zap.Int("wanted", r.Wanted), zap.Int("running", r.Running),
		zap.Int("started", r.Started), zap.Int("pages", r.Pages), zap.Duration("list", r.List), zap.Duration("pass", r.Pass)}
	if r.Err == nil {
		delete(e.failedPasses, r.Kind)
	}
	switch {
	case r.Err != nil:
		e.failedPasses[r.Kind]++
		fields = append(fields, zap.Int("failedPassesInARow", e.failedPasses[r.Kind]), zap.Error(r.Err))
		logAt := e.cfg.Logger.Warn
		if e.failedPasses[r.Kind] >= failedPassesBeforeError {
			logAt = e.cfg.Logger.Error
		}
		logAt("ensuring running workflows failed; next pass retries", fields...)
	case r.Unpolled && r.Missing > 0:
		e.cfg.Logger.Warn("not starting the workflows that are not running: no worker polls their task queue; next pass retries",
			append(fields, zap.Int("missing", r.Missing), zap.String("taskQueue", r.TaskQueue))...)
	case r.Started > 0:
		e.cfg.Logger.Info("started the workflows that were not running", fields...)
	default:
		e.cfg.Logger.Debug("every workflow is running", fields...)
	}
}

// Pass ensures once, kind by kind, that every wanted workflow runs; reason labels the starts.
func (e *Ensurer) Pass(ctx context.Context, reason string) []Report {
	// A pass must end: the SDK retries an unavailable server until the context ends.
	ctx, cancel := context.WithTimeout(ctx, max(e.cfg.Period, 30*time.Second))
	defer cancel()
	reports := make([]Report, 0, len(e.cfg.Kinds))
	for _, kind := range e.cfg.Kinds {
		reports = append(reports, e.pass(ctx, kind, reason))
	}
	return reports
}

func (e *Ensurer) pass(ctx context.Context, kind Kind, reason string) Report {
	begin := time.Now()
	r := Report{Kind: kind.Name, TaskQueue: kind.TaskQueue}
	running, pages, err := e.running(ctx, kind)
	r.Running, r.Pages, r.List = len(running), pages, time.Since(begin)
	if err != nil {
		r.Err, r.Pass = err, time.Since(begin)
		return r
	}
	wanted := kind.Wanted()
	missing := Missing(wanted, running)
	r.Wanted, r.Missing = len(wanted), len(missing)
	if len(missing) > 0 && e.cfg.Polled != nil {
		polled, err := e.cfg.Polled(ctx, kind.TaskQueue)
		if err != nil || !polled {
			r.Err, r.Unpolled, r.Pass = err, err == nil, time.Since(begin)
			return r
		}
	}

	var started atomic.Int32
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultStarts)
	for _, s := range missing {
		g.Go(func() error {
			ok, err := trigger.StartIfNotRunning(gctx, e.cfg.Temporal, s)
			if err != nil {
				return err
			}
			if ok {
				started.Add(1)
				Record(e.cfg.Started, e.cfg.Logger, kind.Name, reason, s.WorkflowID)
			}
			return nil
		})
	}
	r.Err = g.Wait()
	r.Started, r.Pass = int(started.Load()), time.Since(begin)
	return r
}

// Record counts and logs the start of a workflow that was not running.
func Record(started *prometheus.CounterVec, logger *zap.Logger, kind, reason, workflowID string) {
	if started != nil {
		started.WithLabelValues(kind, reason).Inc()
	}
	logger.Info("started a workflow that was not running", zap.String("kind", kind),
		zap.String("reason", reason), zap.String("workflowID", workflowID))
}

// running lists the IDs of the running workflows of kind, page by page.
func (e *Ensurer) running(ctx context.Context, kind Kind) (map[string]bool, int, error) {
	running := map[string]bool{}
	workflowType := kind.WorkflowType
	queues := []string{e.cfg.TaskQueue}
	if kind.TaskQueue != "" && kind.TaskQueue != e.cfg.TaskQueue {
		queues = append(queues, kind.TaskQueue)
	}
	req := &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(e.cfg.PageSize), Query: Query(workflowType, queues...)}
	for pages := 1; ; pages++ {
		resp, err := e.cfg.Temporal.ListWorkflow(ctx, req)
		if err != nil {
			return nil, pages, fmt.Errorf("listing running %s workflows: %w", workflowType, err)
		}
		for _, info := range resp.GetExecutions() {
			running[info.GetExecution().GetWorkflowId()] = true
		}
		if len(resp.GetNextPageToken()) == 0 {
			return running, pages, nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}

// Query is the visibility query of the running workflows of workflowType on any of
// taskQueues (names without quotes, as workflow types and task queues are).
func Query(workflowType string, taskQueues ...string) string {
	return fmt.Sprintf("WorkflowType='%s' AND TaskQueue IN ('%s') AND ExecutionStatus='Running'", workflowType,
		strings.Join(taskQueues, "', '"))
}

// Missing returns the wanted starts whose workflow is not among running, in workflow ID order;
// a workflow ID wanted twice is started once.
func Missing(wanted []trigger.Start, running map[string]bool) []trigger.Start {
	var missing []trigger.Start
	for _, s := range wanted {
		if !running[s.WorkflowID] {
			missing = append(missing, s)
		}
	}
	slices.SortStableFunc(missing, func(a, b trigger.Start) int { return strings.Compare(a.WorkflowID, b.WorkflowID) })
	return slices.CompactFunc(missing, func(a, b trigger.Start) bool { return a.WorkflowID == b.WorkflowID })
}
