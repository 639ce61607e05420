package provisioning

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

var ref = act.Ref{Namespace: "tenant1", Name: "foo"}

func hashes(mutate map[string]string) map[string]string {
	h := map[string]string{}
	for _, step := range []string{act.StepGenerateCertificates, act.StepEnsureNamespace, act.StepInstallEtcd, act.StepWaitEtcdReady,
		act.StepInstallAPIServer, act.StepWaitLoadBalancer, act.StepCertifyLoadBalancer, act.StepWaitAPIServerReady,
		act.StepWriteAdminKubeconfig, act.StepInstallAggregatedAPIServer, act.StepWaitAggregatedAPIServerReady,
		act.StepInitControlPlane, act.StepInstallComponents, act.StepWaitComponentsReady} {
		h[step] = "h-" + step
	}
	for k, v := range mutate {
		h[k] = v
	}
	return h
}

func summary() act.Summary {
	return act.Summary{Exists: true, HasFinalizer: true, Generation: 1, ServiceType: "NodePort", LocalEtcd: true, Hashes: hashes(nil)}
}

// harness mocks every activity, records the order of the calls and the statuses written.
type harness struct {
	env     *testsuite.TestWorkflowEnvironment
	calls   []string
	status  []act.StatusInput
	sum     act.Summary
	invalid string
	fail    map[string]int // step -> failures still to return (non-retryable)
	// noLoadBalancer makes WaitLoadBalancer wait until cancelled.
	noLoadBalancer bool
	// failReady is the number of writes of the Ready status still to fail.
	failReady int
	// scheduled and ran count the callbacks of at: run fails the test unless all ran.
	scheduled, ran int
}

func newHarness(t *testing.T) *harness {
	var s testsuite.WorkflowTestSuite
	h := &harness{env: s.NewTestWorkflowEnvironment(), sum: summary(), fail: map[string]int{}}
	RegisterWorkflow(h.env)
	record := func(step string) error {
		h.calls = append(h.calls, step)
		if h.fail[step] > 0 {
			h.fail[step]--
			return temporal.NewNonRetryableApplicationError("connection refused", "Test", nil)
		}
		return nil
	}
	h.env.OnActivity(activities.ValidateKarmada, mock.Anything, ref).Return(func(context.Context, act.Ref) (act.Summary, error) {
		h.calls = append(h.calls, "ValidateKarmada")
		if h.invalid != "" {
			return h.sum, temporal.NewNonRetryableApplicationError(h.invalid, act.ErrValidation, nil, h.sum)
		}
		return h.sum, nil
	})
	refStep := func(step string) func(context.Context, act.Ref) error {
		return func(context.Context, act.Ref) error { return record(step) }
	}
	installStep := func(step string) func(context.Context, act.InstallInput) error {
		return func(context.Context, act.InstallInput) error { return record(step) }
	}
	h.env.OnActivity(activities.AddKarmadaFinalizer, mock.Anything, ref).Return(refStep("AddKarmadaFinalizer"))
	h.env.OnActivity(activities.RemoveKarmadaFinalizer, mock.Anything, ref).Return(refStep("RemoveKarmadaFinalizer"))
	h.env.OnActivity(activities.Uninstall, mock.Anything, ref).Return(func(context.Context, act.Ref) (int, error) { return 7, record("Uninstall") })
	h.env.OnActivity(activities.GenerateCertificates, mock.Anything, ref).Return(func(context.Context, act.Ref) (act.Certificates, error) {
		return act.Certificates{CertHash: "c1"}, record(act.StepGenerateCertificates)
	})
	h.env.OnActivity(activities.EnsureNamespace, mock.Anything, ref).Return(refStep(act.StepEnsureNamespace))
	h.env.OnActivity(activities.InstallEtcd, mock.Anything, mock.Anything).Return(installStep(act.StepInstallEtcd))
	h.env.OnActivity(activities.WaitEtcdReady, mock.Anything, ref).Return(refStep(act.StepWaitEtcdReady))
	h.env.OnActivity(activities.InstallAPIServer, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.InstallInput) (act.ServiceInfo, error) {
		return act.ServiceInfo{Name: "foo-karmada-apiserver", ServiceType: h.sum.ServiceType, Port: 5443, NodePort: 31000}, record(act.StepInstallAPIServer)
	})
	h.env.OnActivity(activities.WaitLoadBalancer, mock.Anything, ref).Return(func(ctx context.Context, _ act.Ref) (string, error) {
		if h.noLoadBalancer {
			h.calls = append(h.calls, act.StepWaitLoadBalancer)
			// Until cancelled; the test environment may not pass the cancellation on to a
			// mocked activity, so give up after a second of real time (the workflow has
			// moved on by then).
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			return "", errors.New("no load balancer")
		}
		return "198.51.100.9", record(act.StepWaitLoadBalancer)
	})
	h.env.OnActivity(activities.CertifyLoadBalancer, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.LoadBalancerInput) (act.Certificates, error) {
		assert.Equal(t, "198.51.100.9", in.Address)
		return act.Certificates{CertHash: "c2"}, record(act.StepCertifyLoadBalancer)
	})
	h.env.OnActivity(activities.WaitAPIServerReady, mock.Anything, ref).Return(refStep(act.StepWaitAPIServerReady))
	h.env.OnActivity(activities.WriteAdminKubeconfig, mock.Anything, ref).Return(func(context.Context, act.Ref) (string, error) {
		return "https://127.0.0.1:31000", record(act.StepWriteAdminKubeconfig)
	})
	h.env.OnActivity(activities.InstallAggregatedAPIServer, mock.Anything, mock.Anything).Return(installStep(act.StepInstallAggregatedAPIServer))
	h.env.OnActivity(activities.WaitAggregatedAPIServerReady, mock.Anything, ref).Return(refStep(act.StepWaitAggregatedAPIServerReady))
	h.env.OnActivity(activities.InitControlPlane, mock.Anything, ref).Return(refStep(act.StepInitControlPlane))
	h.env.OnActivity(activities.InstallComponents, mock.Anything, mock.Anything).Return(func(context.Context, act.InstallInput) ([]string, error) {
		return []string{"karmada-scheduler"}, record(act.StepInstallComponents)
	})
	h.env.OnActivity(activities.WaitComponentsReady, mock.Anything, ref).Return(refStep(act.StepWaitComponentsReady))
	h.env.OnActivity(activities.WriteKarmadaStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.StatusInput) error {
		if in.Ready && h.failReady > 0 {
			h.failReady--
			return temporal.NewNonRetryableApplicationError("the object has been modified", "Test", nil)
		}
		h.status = append(h.status, in)
		return nil
	})
	return h
}

// installSteps are the steps of a NodePort install, in order.
var installSteps = []string{act.StepEnsureNamespace, act.StepGenerateCertificates, act.StepInstallEtcd, act.StepWaitEtcdReady,
	act.StepInstallAPIServer, act.StepWaitAPIServerReady, act.StepWriteAdminKubeconfig, act.StepInstallAggregatedAPIServer,
	act.StepWaitAggregatedAPIServerReady, act.StepInitControlPlane, act.StepInstallComponents, act.StepWaitComponentsReady}

func (h *harness) at(d time.Duration, f func()) {
	h.scheduled++
	h.env.RegisterDelayedCallback(func() {
		f()
		h.ran++
	}, d)
}

func (h *harness) signal(d time.Duration, mutate func()) {
	h.at(d, func() {
		mutate()
		h.env.SignalWorkflow(SignalChange, Change{})
	})
}

// deleteAt ends the workflow the way a deletion does.
func (h *harness) deleteAt(d time.Duration) { h.signal(d, func() { h.sum.Deleting = true }) }

func (h *harness) run(t *testing.T) {
	h.env.ExecuteWorkflow(Karmada, Input{Namespace: ref.Namespace, Name: ref.Name})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.Equal(t, h.scheduled, h.ran, "the workflow ended before every check ran")
}

func (h *harness) lastStatus(t *testing.T) act.StatusInput {
	t.Helper()
	require.NotEmpty(t, h.status)
	return h.status[len(h.status)-1]
}

func (h *harness) state(t *testing.T) State {
	t.Helper()
	v, err := h.env.QueryWorkflow(QueryState)
	require.NoError(t, err)
	var s State
	require.NoError(t, v.Get(&s))
	return s
}

func TestInstallRunsTheStepsInOrder(t *testing.T) {
	h := newHarness(t)
	h.sum.HasFinalizer = false
	h.at(time.Minute, func() {
		want := append([]string{"ValidateKarmada", "AddKarmadaFinalizer"}, installSteps...)
		assert.Equal(t, want, h.calls)
		last := h.lastStatus(t)
		assert.True(t, last.Ready)
		assert.Equal(t, operatorv1alpha1.ReasonCompleted, last.Reason)
		assert.True(t, last.Completed)
		assert.True(t, last.AdminConfig)
		assert.Equal(t, operatorv1alpha1.ReasonProgressing, h.status[0].Reason)
		s := h.state(t)
		assert.Equal(t, PhaseReady, s.Phase)
		assert.Equal(t, "https://127.0.0.1:31000", s.Progress.Endpoint)
		assert.Equal(t, int32(31000), s.Progress.Service.NodePort)
	})
	h.deleteAt(2 * time.Minute)
	h.run(t)
}

func TestLoadBalancerWaitsForTheAddressAndCertifiesIt(t *testing.T) {
	h := newHarness(t)
	h.sum.ServiceType = "LoadBalancer"
	h.at(time.Minute, func() {
		want := []string{"ValidateKarmada", act.StepEnsureNamespace, act.StepGenerateCertificates, act.StepInstallEtcd, act.StepWaitEtcdReady,
			act.StepInstallAPIServer, act.StepWaitLoadBalancer, act.StepCertifyLoadBalancer, act.StepWaitAPIServerReady,
			act.StepWriteAdminKubeconfig, act.StepInstallAggregatedAPIServer, act.StepWaitAggregatedAPIServerReady,
			act.StepInitControlPlane, act.StepInstallComponents, act.StepWaitComponentsReady}
		assert.Equal(t, want, h.calls)
		assert.Equal(t, "c2", h.state(t).Progress.CertHash, "later steps mount the certificate naming the load balancer")
	})
	h.deleteAt(2 * time.Minute)
	h.run(t)
}

func TestFailureResumesAtTheFailedStep(t *testing.T) {
	h := newHarness(t)
	h.fail[act.StepInitControlPlane] = 2
	h.at(time.Hour, func() {
		counts := map[string]int{}
		for _, c := range h.calls {
			counts[c]++
		}
		for _, step := range installSteps {
			want := 1
			if step == act.StepInitControlPlane {
				want = 3
			}
			assert.Equal(t, want, counts[step], step)
		}
		assert.Equal(t, 3, counts["ValidateKarmada"], "each retry re-reads the object")
		failed := 0
		for _, s := range h.status {
			if s.Reason == operatorv1alpha1.ReasonFailed {
				failed++
				assert.Equal(t, "InitControlPlane: connection refused", s.Message)
			}
		}
		assert.Equal(t, 2, failed, "each failed attempt is reported")
		assert.True(t, h.lastStatus(t).Ready)
	})
	h.deleteAt(2 * time.Hour)
	h.run(t)
}

// A failed write of the Ready status is retried: the object does not stay Progressing.
func TestFailedReadyStatusWriteIsRetried(t *testing.T) {
	h := newHarness(t)
	h.failReady = 1
	h.at(time.Hour, func() {
		assert.Zero(t, h.failReady)
		last := h.lastStatus(t)
		assert.True(t, last.Ready)
		assert.Equal(t, operatorv1alpha1.ReasonCompleted, last.Reason)
		s := h.state(t)
		assert.Equal(t, PhaseReady, s.Phase)
		assert.Equal(t, 2, s.Passes, "the retry's pass wrote it")
	})
	h.deleteAt(2 * time.Hour)
	h.run(t)
}

func TestSpecChangeRerunsOnlyAffectedSteps(t *testing.T) {
	h := newHarness(t)
	var before int
	h.signal(time.Minute, func() {
		before = len(h.calls)
		h.sum.Generation = 2
		h.sum.Hashes = hashes(map[string]string{act.StepInstallComponents: "new", act.StepWaitComponentsReady: "new"})
	})
	h.at(2*time.Minute, func() {
		assert.Equal(t, []string{"ValidateKarmada", act.StepInstallComponents, act.StepWaitComponentsReady}, h.calls[before:])
		last := h.lastStatus(t)
		assert.True(t, last.Ready)
		assert.Equal(t, int64(2), last.Generation)
	})
	// A resync runs every step again.
	h.at(3*time.Minute, func() {
		before = len(h.calls)
		h.env.SignalWorkflow(SignalResync, nil)
	})
	h.at(4*time.Minute, func() {
		assert.Equal(t, append([]string{"ValidateKarmada"}, installSteps...), h.calls[before:])
	})
	h.deleteAt(5 * time.Minute)
	h.run(t)
}

func TestSuspendPausesUntilResumed(t *testing.T) {
	h := newHarness(t)
	h.sum.Suspended = true
	h.at(time.Hour, func() {
		assert.Equal(t, []string{"ValidateKarmada"}, h.calls)
		assert.Equal(t, PhaseSuspended, h.state(t).Phase)
	})
	h.signal(time.Hour+time.Minute, func() { h.sum.Suspended = false })
	h.at(2*time.Hour, func() {
		assert.Equal(t, append([]string{"ValidateKarmada", "ValidateKarmada"}, installSteps...), h.calls)
	})
	h.deleteAt(3 * time.Hour)
	h.run(t)
}

func TestValidationErrorWaitsForASpecChange(t *testing.T) {
	h := newHarness(t)
	h.invalid = "spec.components.karmadaAPIServer.serviceType: must be ClusterIP, NodePort or LoadBalancer"
	h.at(10*time.Hour, func() {
		assert.Equal(t, []string{"ValidateKarmada"}, h.calls, "no retry loop")
		require.Len(t, h.status, 1)
		assert.Equal(t, operatorv1alpha1.ReasonValidationError, h.status[0].Reason)
		assert.Equal(t, h.invalid, h.status[0].Message)
		assert.True(t, h.status[0].Warning, "an event is recorded")
		assert.False(t, h.status[0].Ready)
		assert.Equal(t, PhaseInvalid, h.state(t).Phase)
	})
	h.signal(11*time.Hour, func() { h.invalid, h.sum.Generation = "", 2 })
	h.at(12*time.Hour, func() {
		assert.Equal(t, append([]string{"ValidateKarmada", "ValidateKarmada"}, installSteps...), h.calls)
	})
	h.deleteAt(13 * time.Hour)
	h.run(t)
}

func TestDeletionUninstallsThenReleasesTheFinalizer(t *testing.T) {
	h := newHarness(t)
	h.sum.Deleting = true
	h.run(t)
	assert.Equal(t, []string{"ValidateKarmada", "Uninstall", "RemoveKarmadaFinalizer"}, h.calls)
}

func TestDisableCascadingDeletionKeepsEverything(t *testing.T) {
	h := newHarness(t)
	h.sum.Deleting, h.sum.KeepOnDelete = true, true
	h.run(t)
	assert.Equal(t, []string{"ValidateKarmada", "RemoveKarmadaFinalizer"}, h.calls)
}

func TestSignalDuringAWaitCancelsItAndStartsAfresh(t *testing.T) {
	h := newHarness(t)
	h.noLoadBalancer = true
	h.sum.ServiceType = "LoadBalancer"
	// A running activity stops time skipping: the deletion comes after half a second of
	// real time.
	h.deleteAt(500 * time.Millisecond)
	h.run(t)
	assert.Equal(t, []string{"ValidateKarmada", act.StepEnsureNamespace, act.StepGenerateCertificates, act.StepInstallEtcd, act.StepWaitEtcdReady,
		act.StepInstallAPIServer, act.StepWaitLoadBalancer, "ValidateKarmada", "Uninstall", "RemoveKarmadaFinalizer"}, h.calls)
	for _, s := range h.status {
		assert.NotEqual(t, operatorv1alpha1.ReasonFailed, s.Reason, "an interruption is not a failure")
	}
}

func TestResyncInterruptedBySpecChangeStillRunsEverything(t *testing.T) {
	h := newHarness(t)
	h.sum.ServiceType = "LoadBalancer"
	// Installed once, then a resync whose pass waits for a load balancer that does not come;
	// a spec change interrupts it: the next pass still runs every step.
	h.at(time.Minute, func() {
		h.noLoadBalancer = true
		h.env.SignalWorkflow(SignalResync, nil)
	})
	h.at(time.Minute+200*time.Millisecond, func() {
		h.noLoadBalancer = false
		h.sum.Generation = 2
		h.env.SignalWorkflow(SignalChange, Change{})
	})
	var before int
	h.at(time.Minute+100*time.Millisecond, func() { before = len(h.calls) })
	h.at(time.Minute+time.Second, func() {
		ran := h.calls[before:]
		assert.Contains(t, ran, act.StepEnsureNamespace, "the forced pass was not lost: %v", ran)
		assert.Contains(t, ran, act.StepInstallEtcd)
		assert.True(t, h.lastStatus(t).Ready)
	})
	h.deleteAt(2 * time.Minute)
	h.run(t)
}

// Continue-as-new carries what succeeded with which inputs, and a resync that arrived during
// the last pass (a change needs nothing carried: every run starts with a pass).
func TestContinueAsNewCarriesProgressAndAPendingResync(t *testing.T) {
	h := newHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in act.StatusInput
		if info.ActivityType.Name == "WriteKarmadaStatus" && args.Get(&in) == nil && in.Ready {
			h.env.SignalWorkflow(SignalResync, nil) // while the Ready status is written
		}
	})
	h.env.ExecuteWorkflow(Karmada, Input{Namespace: ref.Namespace, Name: ref.Name})
	require.True(t, h.env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, h.env.GetWorkflowError(), &next)
	assert.Equal(t, ref.Namespace, next.Namespace)
	assert.Equal(t, ref.Name, next.Name)
	assert.True(t, next.Resync, "the resync is carried")
	for _, step := range installSteps {
		assert.Equal(t, "h-"+step, next.Progress.Done[step], step)
	}
	assert.Equal(t, "c1", next.Progress.CertHash)
	assert.Equal(t, "https://127.0.0.1:31000", next.Progress.Endpoint)
	assert.NotEmpty(t, next.Progress.LastStatus)
}
