package trigger

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Start describes the SignalWithStartWorkflow a handler sends for one key.
type Start struct {
	// WorkflowID is deterministic for the key, e.g. "mcs/<namespace>/<name>".
	WorkflowID string
	// Workflow is the workflow function or its registered name; Args its input when started.
	Workflow any
	Args     []any
	// TaskQueue the workflow runs on.
	TaskQueue string
	// WorkflowTaskTimeout bounds each workflow task of a run started here, so also how long
	// a task held by a worker that crashed waits before another worker gets it (0: Temporal's
	// default, 10s). Continued runs keep it.
	WorkflowTaskTimeout time.Duration
	// SearchAttributes set when the workflow starts.
	SearchAttributes temporal.SearchAttributes
	// Signal and SignalArg are sent to the running workflow, or to the new one.
	Signal    string
	SignalArg any
}

// options are the start options of s under the given workflow ID conflict policy.
func (s Start) options(conflict enumspb.WorkflowIdConflictPolicy) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       s.WorkflowID,
		TaskQueue:                s.TaskQueue,
		WorkflowTaskTimeout:      s.WorkflowTaskTimeout,
		WorkflowIDConflictPolicy: conflict,
		TypedSearchAttributes:    s.SearchAttributes,
	}
}

// SignalWithStart signals the running workflow of s.WorkflowID or starts it with the signal.
// The workflow ID conflict policy is USE_EXISTING: a running workflow is never restarted.
func SignalWithStart(ctx context.Context, c client.Client, s Start) error {
	options := s.options(enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING)
	if _, err := c.SignalWithStartWorkflow(ctx, s.WorkflowID, s.Signal, s.SignalArg, options, s.Workflow, s.Args...); err != nil {
		return fmt.Errorf("signal %s with start of workflow %s: %w", s.Signal, s.WorkflowID, err)
	}
	return nil
}

// SignalOrStart signals the running workflow of s.WorkflowID and, only when none is running,
// starts it with the signal; started tells which happened. For a long-lived workflow, which is
// nearly always running, a plain signal costs the Temporal server about half of a
// SignalWithStart.
func SignalOrStart(ctx context.Context, c client.Client, s Start) (started bool, err error) {
	err = c.SignalWorkflow(ctx, s.WorkflowID, "", s.Signal, s.SignalArg)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return true, SignalWithStart(ctx, c, s)
	}
	if err != nil {
		return false, fmt.Errorf("signal %s to workflow %s: %w", s.Signal, s.WorkflowID, err)
	}
	return false, nil
}

// StartIfNotRunning starts the workflow of s.WorkflowID and then sends it the signal, only when
// none is running; a running one is left alone, unsignalled. started tells which. The ensure
// loop uses it: a workflow missing from its visibility list may only be missing from a list
// that lags behind, and a signal would make it do its work again.
func StartIfNotRunning(ctx context.Context, c client.Client, s Start) (started bool, err error) {
	options := s.options(enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)
	options.WorkflowExecutionErrorWhenAlreadyStarted = true
	_, err = c.ExecuteWorkflow(ctx, options, s.Workflow, s.Args...)
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &running) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("start of workflow %s: %w", s.WorkflowID, err)
	}
	if err := c.SignalWorkflow(ctx, s.WorkflowID, "", s.Signal, s.SignalArg); err != nil {
		return true, fmt.Errorf("signal %s to the new workflow %s: %w", s.Signal, s.WorkflowID, err)
	}
	return true, nil
}

// SignalIfRunning signals the running workflow of workflowID; a workflow that is not running
// needs nothing.
func SignalIfRunning(ctx context.Context, c client.Client, workflowID, signal string, arg any) error {
	err := c.SignalWorkflow(ctx, workflowID, "", signal, arg)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("signal %s to workflow %s: %w", signal, workflowID, err)
	}
	return nil
}
