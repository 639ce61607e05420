// Package capabilities keeps the worker and the starter of one task queue in agreement on what
// they run. Each process writes its capabilities (the MultiClusterService always, Work
// execution, cluster health and provisioning as their --enable-* flags say) into its Temporal
// identity, which the server shows beside every poller and every workflow start. The starter
// refuses to run beside workers whose capabilities differ from its own (it would start
// workflows that no worker registers, or leave theirs unstarted); a worker refuses to run when
// workflows it does not register are started on its task queue.
package capabilities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/karmadaflow/karmadaflow/internal/options"
)

// The capabilities.
const (
	MCS           = "mcs"
	WorkExecution = "work-execution"
	ClusterHealth = "cluster-health"
	Provisioning  = "provisioning"
)

// Set is a sorted list of capabilities.
type Set []string

// Of returns the capabilities options enable.
func Of(o *options.Options) Set {
	s := Set{MCS}
	for name, on := range map[string]bool{WorkExecution: o.EnableWorkExecution, ClusterHealth: o.EnableClusterHealth,
		Provisioning: o.EnableProvisioning} {
		if on {
			s = append(s, name)
		}
	}
	slices.Sort(s)
	return s
}

func (s Set) String() string { return strings.Join(s, ",") }

// Identity is the Temporal identity of a process of component with capabilities s: the SDK's
// default (pid@host) followed by, for example, "karmadaflow-worker[cluster-health,mcs]".
func Identity(component options.Component, s Set) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s karmadaflow-%s[%s]", os.Getpid(), host, component, s)
}

// parse returns the capabilities of a worker's identity made by Identity; ok is false for
// any other identity.
func parse(identity string) (s Set, ok bool) {
	const marker = " karmadaflow-" + string(options.Worker) + "["
	i := strings.LastIndex(identity, marker)
	if i < 0 || !strings.HasSuffix(identity, "]") {
		return nil, false
	}
	list := identity[i+len(marker) : len(identity)-1]
	if list == "" {
		return Set{}, true
	}
	return strings.Split(list, ","), true
}

// Clocks of the server (which stamps a poller's last access) and of this process may differ
// by this much.
const clockSkew = 5 * time.Second

// CheckWorkers returns an error naming every worker that polled taskQueue after since (the
// start of this process: older pollers may be workers that are gone) with capabilities other
// than want.
func CheckWorkers(ctx context.Context, c client.Client, taskQueue string, since time.Time, want Set) error {
	resp, err := c.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return fmt.Errorf("describing task queue %s: %w", taskQueue, err)
	}
	return mismatches(resp.GetPollers(), taskQueue, since, want)
}

// mismatches is CheckWorkers' verdict on the pollers of taskQueue.
func mismatches(pollers []*taskqueuepb.PollerInfo, taskQueue string, since time.Time, want Set) error {
	var problems []string
	for _, p := range pollers {
		got, ok := parse(p.GetIdentity())
		if !ok || p.GetLastAccessTime().AsTime().Before(since.Add(clockSkew)) || slices.Equal(got, want) {
			continue
		}
		problems = append(problems, fmt.Sprintf("worker %q runs [%s]", p.GetIdentity(), got))
	}
	if len(problems) == 0 {
		return nil
	}
	return &MismatchError{fmt.Sprintf("capabilities differ on task queue %s: this starter runs [%s] but %s; give the worker and the starter the same --enable-work-execution, --enable-cluster-health and --enable-provisioning (the Helm chart's mode does)",
		taskQueue, want, strings.Join(problems, ", "))}
}

// CheckStarted returns an error naming the workflows started on taskQueue after since whose
// types a worker with capabilities have does not register: a starter with other capabilities
// starts them. workflowTypes maps every capability to the workflow type it runs.
func CheckStarted(ctx context.Context, c client.Client, namespace, taskQueue string, since time.Time, have Set,
	workflowTypes map[string]string) error {
	var missing []string
	for name, workflowType := range workflowTypes {
		if !slices.Contains(have, name) {
			missing = append(missing, "'"+workflowType+"'")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	query := fmt.Sprintf("TaskQueue = '%s' AND WorkflowType IN (%s) AND StartTime > '%s'",
		taskQueue, strings.Join(missing, ", "), since.Add(clockSkew).UTC().Format(time.RFC3339Nano))
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: 5, Query: query})
	if err != nil {
		return fmt.Errorf("listing workflows started on task queue %s: %w", taskQueue, err)
	}
	var started []string
	for _, e := range resp.GetExecutions() {
		started = append(started, fmt.Sprintf("%s (%s)", e.GetExecution().GetWorkflowId(), e.GetType().GetName()))
	}
	if len(started) == 0 {
		return nil
	}
	return &MismatchError{fmt.Sprintf("capabilities differ on task queue %s: this worker runs [%s] but a starter started %s, which it does not register; give the worker and the starter the same --enable-work-execution, --enable-cluster-health and --enable-provisioning (the Helm chart's mode does)",
		taskQueue, have, strings.Join(started, ", "))}
}

// MismatchError says which capabilities differ, and how to make them agree.
type MismatchError struct{ message string }

func (e *MismatchError) Error() string { return e.message }

// Watch runs check every period until ctx ends, and returns the first MismatchError it
// finds; other errors (Temporal briefly unreachable) are logged and the next check follows.
func Watch(ctx context.Context, period time.Duration, logger *zap.Logger, check func(context.Context) error) error {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			err := check(ctx)
			var mismatch *MismatchError
			if errors.As(err, &mismatch) {
				return err
			}
			if err != nil && ctx.Err() == nil {
				logger.Warn("checking the capabilities of the task queue's peers", zap.Error(err))
			}
		}
	}
}
