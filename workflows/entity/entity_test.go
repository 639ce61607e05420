package entity

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// counter is a process that counts the "add" signals it receives, passes once per wake-up,
// continues as new when a pass has seen askAt or more, and ends when a pass sees endAt or more.
// It records the loop's calls in order.
type counter struct {
	signals workflow.ReceiveChannel
	resyncs *Resyncs
	total   int
	woken   bool
	askAt   int
	endAt   int
	calls   []string
}

type counterInput struct{ Total, AskAt, EndAt int }

func (c *counter) Drain() {
	var n int
	for c.signals.ReceiveAsync(&n) {
		c.total += n
		c.woken = true
	}
	c.resyncs.Drain(func(any) {})
	c.calls = append(c.calls, "drain")
}

func (c *counter) UpgradeAsked() bool { return c.resyncs.UpgradeAsked() }

func (c *counter) Due() bool { return c.woken }

func (c *counter) Wait(ctx workflow.Context) {
	c.calls = append(c.calls, "wait")
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(c.signals, func(ch workflow.ReceiveChannel, _ bool) {
		var n int
		ch.Receive(ctx, &n)
		c.total += n
		c.woken = true
	})
	c.resyncs.AddTo(sel, func(any) {})
	sel.Select(ctx)
}

func (c *counter) Pass(workflow.Context) (bool, error) {
	c.calls = append(c.calls, "pass")
	c.woken = false
	return c.endAt > 0 && c.total >= c.endAt, nil
}

func (c *counter) ContinueAsNewAsked(workflow.Context) bool { return c.askAt > 0 && c.total >= c.askAt }

func (c *counter) Next() counterInput { return counterInput{Total: c.total} }

var lastCalls []string

func counting(ctx workflow.Context, in counterInput) error {
	c := &counter{signals: workflow.GetSignalChannel(ctx, "add"), resyncs: NewResyncs(ctx, "resync"), total: in.Total,
		woken: true, askAt: in.AskAt, endAt: in.EndAt}
	defer func() { lastCalls = c.calls }()
	return Run(ctx, counting, c)
}

func runCounting(t *testing.T, in counterInput, signals ...int) (*testsuite.TestWorkflowEnvironment, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(counting)
	for i, n := range signals {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("add", n) }, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(counting, in)
	require.True(t, env.IsWorkflowCompleted())
	return env, env.GetWorkflowError()
}

func TestRunPassesOnEachWakeUpUntilAPassEnds(t *testing.T) {
	_, err := runCounting(t, counterInput{EndAt: 3}, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"drain", "pass", // a new run passes at once
		"drain", "wait", "drain", "pass", // then waits for a signal
		"drain", "wait", "drain", "pass", // the pass that sees 3 ends the workflow
	}, lastCalls)
}

func TestRunContinuesAsNewWithNextWhenAsked(t *testing.T) {
	_, err := runCounting(t, counterInput{AskAt: 2}, 1, 1)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "continued as new: %v", err)
	assert.Equal(t, "counting", can.WorkflowType.Name)
	var next counterInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, counterInput{Total: 2}, next, "the next run starts with what Next gives")
	assert.Equal(t, []string{"drain", "pass", "drain", "wait", "drain", "pass", "drain", "wait", "drain", "pass", "drain"}, lastCalls,
		"the signals are drained once more before continuing")
}

// A wake makes the run continue as new before its next pass, with what Next gives; a resync
// with another payload is no wake.
func TestRunMovesOnAWakeBeforeItsNextPass(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(counting)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("resync", map[string]bool{"ContinueAsNew": true}) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("add", 5) }, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow("add", 2)
		env.SignalWorkflow("resync", map[string]bool{"Wake": true})
	}, 3*time.Second)
	env.ExecuteWorkflow(counting, counterInput{})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "continued as new: %v", env.GetWorkflowError())
	var next counterInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, counterInput{Total: 7}, next)
	assert.Equal(t, []string{
		"drain", "pass",
		"drain", "wait", "drain", "pass", // the resync that is no wake passes
		"drain", "wait", "drain", "pass", // 5
		"drain", "wait", "drain", "pass", // 2
		"drain", "wait", "drain", "drain", // the wake: the last signals taken, no pass
	}, lastCalls)
}

func TestRunStopsWhenCancelled(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(counting)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("add", 1) }, 2*time.Second)
	env.ExecuteWorkflow(counting, counterInput{})
	require.True(t, env.IsWorkflowCompleted())
	assert.Error(t, env.GetWorkflowError())
}

// TestRetryDelayDoublesUpToItsLimit holds the backoffs the workflows used before they shared
// RetryDelay: one second doubled up to a minute (MultiClusterService, Work execution) and five
// seconds doubled up to two minutes (provisioning).
func TestRetryDelayDoublesUpToItsLimit(t *testing.T) {
	for failures := 1; failures <= 40; failures++ {
		assert.Equal(t, min(time.Second<<min(failures-1, 6), time.Minute), RetryDelay(failures, time.Second, time.Minute), "failures %d", failures)
		assert.Equal(t, min(5*time.Second<<min(failures-1, 5), 2*time.Minute), RetryDelay(failures, 5*time.Second, 2*time.Minute), "failures %d", failures)
	}
	assert.Equal(t, time.Second, RetryDelay(0, time.Second, time.Minute), "no failure yet: the first delay")
}
