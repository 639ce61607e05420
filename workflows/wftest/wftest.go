// Package wftest holds the helpers the workflow packages' unit tests share on the Temporal SDK's
// test environment: checking a workflow at a given workflow time, querying it, and decoding the
// input it continued as new with. It is imported by tests only.
package wftest

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// ContinuedInput decodes into input the input a workflow continued as new with, failing the
// test when err is not a continue-as-new.
func ContinuedInput(t *testing.T, err error, input any) {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("the workflow did not continue as new: %v", err)
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, input); err != nil {
		t.Fatalf("decoding the continued input: %v", err)
	}
}

// CheckAt runs workflowFn(args...) in env, calls check at workflow time at and then cancels
// the workflow. The test fails if check never ran: a workflow that ended early cannot pass.
func CheckAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration, check func(), workflowFn any, args ...any) {
	t.Helper()
	checked := false
	env.RegisterDelayedCallback(func() {
		check()
		checked = true
		env.CancelWorkflow()
	}, at)
	env.ExecuteWorkflow(workflowFn, args...)
	if !checked {
		t.Fatalf("the checks at %s never ran: the workflow ended first (%v)", at, env.GetWorkflowError())
	}
}

// Query answers the query name of the workflow running in env, failing the test on an error.
func Query[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment, name string) T {
	t.Helper()
	var out T
	v, err := env.QueryWorkflow(name)
	if err == nil {
		err = v.Get(&out)
	}
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	return out
}
