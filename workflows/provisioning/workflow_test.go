package provisioning

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
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
		act.StepInitControlPlane, act.StepInstallComponents, act.StepWaitComponentsReady, act.StepRemoveOldComponents} {
		h[step] = "h-" + step
	}
	for _, c := range components {
		for _, step := range []string{act.StepInstallComponent, act.StepWaitComponentReady} {
			h[act.ComponentStep(step, c)] = "h-" + act.ComponentStep(step, c)
		}
	}
	for k, v := range mutate {
		h[k] = v
	}
	return h
}

// components are the components of the instance the harness installs, in order.
var components = []string{"kube-controller-manager", "karmada-scheduler"}

func summary() act.Summary {
	return act.Summary{Exists: true, HasFinalizer: true, Generation: 1, ServiceType: "NodePort", LocalEtcd: true, Hashes: hashes(nil),
		Components: components}
}

// certificatesDue is when the harness's certificates are first due for renewal.
var certificatesDue = 240 * 24 * time.Hour

// harness mocks every activity, records the order of the calls and the statuses written.
type harness struct {
	env *testsuite.TestWorkflowEnvironment
	// mu guards the fields below between the activity fakes, which the test environment runs
	// in goroutines of their own, and the callbacks of at.
	mu      sync.Mutex
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
	// inspections counts the reads of the certificates' expiry.
	inspections int
}

func newHarness(t *testing.T) *harness {
	var s testsuite.WorkflowTestSuite
	h := &harness{env: s.NewTestWorkflowEnvironment(), sum: summary(), fail: map[string]int{}}
	RegisterWorkflow(h.env)
	record := func(step string) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.calls = append(h.calls, step)
		if h.fail[step] > 0 {
			h.fail[step]--
			return temporal.NewNonRetryableApplicationError("connection refused", "Test", nil)
		}
		return nil
	}
	h.env.OnActivity(activities.ValidateKarmada, mock.Anything, ref).Return(func(context.Context, act.Ref) (act.Summary, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
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
		h.mu.Lock()
		wait := h.noLoadBalancer
		if wait {
			h.calls = append(h.calls, act.StepWaitLoadBalancer)
		}
		h.mu.Unlock()
		if wait {
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
	h.env.OnActivity(activities.InstallComponent, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.ComponentInput) error {
		return record(act.ComponentStep(act.StepInstallComponent, in.Component))
	})
	h.env.OnActivity(activities.WaitComponentReady, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.ComponentInput) error {
		return record(act.ComponentStep(act.StepWaitComponentReady, in.Component))
	})
	h.env.OnActivity(activities.RemoveOldComponents, mock.Anything, ref).Return(refStep(act.StepRemoveOldComponents))
	h.env.OnActivity(activities.InspectCertificates, mock.Anything, ref).Return(func(context.Context, act.Ref) (act.CertificateExpiries, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.inspections++
		now := h.env.Now()
		return act.CertificateExpiries{NotAfter: now.Add(365 * 24 * time.Hour), RenewAt: now.Add(certificatesDue),
			Items: []act.CertificateExpiry{{Name: "foo-karmada-cert/apiserver.crt", NotAfter: now.Add(365 * 24 * time.Hour)}}}, nil
	})
	h.env.OnActivity(activities.WriteKarmadaStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.StatusInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if in.Ready && h.failReady > 0 {
			h.failReady--
			return temporal.NewNonRetryableApplicationError("the object has been modified", "Test", nil)
		}
		h.status = append(h.status, in)
		return nil
	})
	return h
}

// installSteps are the steps of a NodePort install, in order: the first install starts every
// component before it waits for them.
var installSteps = []string{act.StepEnsureNamespace, act.StepGenerateCertificates, act.StepInstallEtcd, act.StepWaitEtcdReady,
	act.StepInstallAPIServer, act.StepWaitAPIServerReady, act.StepWriteAdminKubeconfig, act.StepInstallAggregatedAPIServer,
	act.StepWaitAggregatedAPIServerReady, act.StepInitControlPlane,
	act.ComponentStep(act.StepInstallComponent, components[0]), act.ComponentStep(act.StepInstallComponent, components[1]),
	act.ComponentStep(act.StepWaitComponentReady, components[0]), act.ComponentStep(act.StepWaitComponentReady, components[1]),
	act.StepRemoveOldComponents}

// rolloutSteps are the steps of a pass that runs every step once installed: the components
// roll one at a time.
var rolloutSteps = append(installSteps[:10:10],
	act.ComponentStep(act.StepInstallComponent, components[0]), act.ComponentStep(act.StepWaitComponentReady, components[0]),
	act.ComponentStep(act.StepInstallComponent, components[1]), act.ComponentStep(act.StepWaitComponentReady, components[1]),
	act.StepRemoveOldComponents)

func (h *harness) at(d time.Duration, f func()) {
	h.scheduled++
	h.env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
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
		want := append([]string{"ValidateKarmada", act.StepEnsureNamespace, act.StepGenerateCertificates, act.StepInstallEtcd, act.StepWaitEtcdReady,
			act.StepInstallAPIServer, act.StepWaitLoadBalancer, act.StepCertifyLoadBalancer, act.StepWaitAPIServerReady,
			act.StepWriteAdminKubeconfig, act.StepInstallAggregatedAPIServer, act.StepWaitAggregatedAPIServerReady},
			installSteps[9:]...)
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
		install, wait := act.ComponentStep(act.StepInstallComponent, "karmada-scheduler"), act.ComponentStep(act.StepWaitComponentReady, "karmada-scheduler")
		h.sum.Hashes = hashes(map[string]string{install: "new", wait: "new"})
	})
	h.at(2*time.Minute, func() {
		assert.Equal(t, []string{"ValidateKarmada", act.ComponentStep(act.StepInstallComponent, "karmada-scheduler"),
			act.ComponentStep(act.StepWaitComponentReady, "karmada-scheduler")}, h.calls[before:])
		last := h.lastStatus(t)
		assert.True(t, last.Ready)
		assert.Equal(t, int64(2), last.Generation)
		rolling := h.status[len(h.status)-2]
		assert.Equal(t, "rolling out generation 2: rolling karmada-scheduler (component 2 of 2)", rolling.Message)
		assert.Equal(t, operatorv1alpha1.ReasonProgressing, rolling.Reason)
	})
	// A resync runs every step again.
	h.at(3*time.Minute, func() {
		before = len(h.calls)
		h.env.SignalWorkflow(SignalResync, nil)
	})
	h.at(4*time.Minute, func() {
		assert.Equal(t, append([]string{"ValidateKarmada"}, rolloutSteps...), h.calls[before:])
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

// TestValidationErrorIsCheckedAgainNowAndThen: a refused spec is checked again every
// recheckInvalidAfter, without writing the same refusal twice, and a refusal that clears
// without a signal (a remote host cluster's Secret fixed) installs at the next check.
func TestValidationErrorIsCheckedAgainNowAndThen(t *testing.T) {
	h := newHarness(t)
	h.invalid = "spec.hostCluster.secretRef: Secret tenant1/remote, key kubeconfig: users[\"x\"].exec: refused"
	h.at(10*time.Hour+time.Minute, func() {
		assert.Len(t, h.calls, int(10*time.Hour/recheckInvalidAfter)+1, "one check at the start and one every %s", recheckInvalidAfter)
		assert.NotContains(t, h.calls, act.StepGenerateCertificates)
		require.Len(t, h.status, 1, "the same refusal is written once")
		assert.Equal(t, operatorv1alpha1.ReasonValidationError, h.status[0].Reason)
		assert.Equal(t, h.invalid, h.status[0].Message)
		assert.True(t, h.status[0].Warning, "an event is recorded")
		assert.False(t, h.status[0].Ready)
		assert.Equal(t, PhaseInvalid, h.state(t).Phase)
		h.invalid = "spec.hostCluster.secretRef: Secret tenant1/remote, key kubeconfig: users[\"x\"].tokenFile: refused"
	})
	h.at(10*time.Hour+recheckInvalidAfter+time.Minute, func() {
		require.Len(t, h.status, 2, "another refusal is written")
		assert.Equal(t, h.invalid, h.status[1].Message)
		h.invalid = "" // fixed, without a signal
	})
	h.at(10*time.Hour+2*recheckInvalidAfter+time.Minute, func() {
		assert.Subset(t, h.calls, installSteps, "installed at the next check")
		assert.Equal(t, PhaseReady, h.state(t).Phase)
	})
	h.deleteAt(11 * time.Hour)
	h.run(t)
}

// TestValidationErrorClearsAtASpecChange: a spec change is checked at once.
func TestValidationErrorClearsAtASpecChange(t *testing.T) {
	h := newHarness(t)
	h.invalid = "spec.components.karmadaAPIServer.serviceType: must be ClusterIP, NodePort or LoadBalancer"
	h.signal(time.Minute, func() { h.invalid, h.sum.Generation = "", 2 })
	h.at(2*time.Minute, func() {
		assert.Equal(t, append([]string{"ValidateKarmada", "ValidateKarmada"}, installSteps...), h.calls)
	})
	h.deleteAt(time.Hour)
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

func TestStatusNamesWhatRolls(t *testing.T) {
	h := newHarness(t)
	h.at(time.Minute, func() {
		var messages []string
		for _, st := range h.status {
			if st.Reason == operatorv1alpha1.ReasonProgressing {
				messages = append(messages, st.Message)
			}
		}
		// The API server's status is written again once its Service exists.
		assert.Equal(t, []string{
			"installing generation 1",
			"installing generation 1: issuing certificates",
			"installing generation 1: rolling etcd",
			"installing generation 1: rolling karmada-apiserver",
			"installing generation 1: rolling karmada-apiserver",
			"installing generation 1: rolling karmada-aggregated-apiserver",
			"installing generation 1: applying the CRDs and objects of the control plane",
			"installing generation 1: rolling kube-controller-manager (component 1 of 2)",
			"installing generation 1: rolling karmada-scheduler (component 2 of 2)",
		}, messages)
		assert.Equal(t, "rolling karmada-scheduler (component 2 of 2)", h.state(t).Rolling)
	})
	h.deleteAt(2 * time.Minute)
	h.run(t)
}

func TestFailedRolloutStopsAtItsComponent(t *testing.T) {
	h := newHarness(t)
	failing := act.ComponentStep(act.StepWaitComponentReady, components[0])
	// Installed, then an upgrade of both components whose first rollout fails.
	h.signal(time.Minute, func() {
		h.sum.Generation = 2
		changed := map[string]string{}
		for _, step := range rolloutSteps[10:14] {
			changed[step] = "new"
		}
		h.sum.Hashes = hashes(changed)
		h.fail[failing] = 1
	})
	h.at(time.Minute+3*time.Second, func() {
		assert.Equal(t, []string{act.ComponentStep(act.StepInstallComponent, components[0]), failing}, h.calls[len(h.calls)-2:],
			"nothing rolls after the failed component")
		last := h.lastStatus(t)
		assert.Equal(t, operatorv1alpha1.ReasonFailed, last.Reason)
		assert.Contains(t, last.Message, failing)
		assert.Equal(t, PhaseFailed, h.state(t).Phase)
	})
	h.at(2*time.Minute, func() {
		assert.Equal(t, append([]string{"ValidateKarmada"}, rolloutSteps[11:14]...), h.calls[len(h.calls)-4:], "the retry resumes at the failed component")
		assert.True(t, h.lastStatus(t).Ready)
	})
	h.deleteAt(3 * time.Minute)
	h.run(t)
}

func TestCertificatesRenewOnATimer(t *testing.T) {
	h := newHarness(t)
	var started time.Time
	var before int
	h.at(time.Minute, func() {
		started = h.env.Now()
		last := h.lastStatus(t)
		require.NotNil(t, last.Certificates, "the Ready status carries the certificates' expiry")
		assert.Equal(t, "foo-karmada-cert/apiserver.crt", last.Certificates.Items[0].Name)
		s := h.state(t)
		assert.WithinDuration(t, started.Add(certificatesDue), s.RenewAt, 2*time.Minute)
		assert.Equal(t, 1, h.inspections)
		before = len(h.calls)
	})
	h.at(certificatesDue-time.Hour, func() {
		assert.Len(t, h.calls, before, "nothing runs before the renewal is due")
	})
	h.at(certificatesDue+time.Hour, func() {
		renewal := slices.DeleteFunc(slices.Clone(rolloutSteps), func(step string) bool { return step == act.StepInitControlPlane })
		assert.Equal(t, append([]string{"ValidateKarmada"}, renewal...), h.calls[before:], "a renewal runs every step but InitControlPlane")
		assert.Equal(t, 2, h.inspections)
		var renewing []string
		for _, st := range h.status {
			if strings.HasPrefix(st.Message, "renewing certificates") {
				renewing = append(renewing, st.Message)
			}
		}
		assert.Contains(t, renewing, "renewing certificates (generation 1): rolling etcd")
		assert.True(t, h.lastStatus(t).Ready)
		assert.True(t, h.state(t).RenewAt.After(h.env.Now()), "the next renewal is scheduled")
	})
	h.deleteAt(certificatesDue + 2*time.Hour)
	h.run(t)
}
