package provisioning

import (
	"strconv"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The install: the spec's steps in order, each run when forced, not done yet, or affected by a
// spec change since it was.

// install is the install, step by step, as the spec lists it. A step runs when forced, when
// it has not succeeded yet, or when the spec parts it depends on changed since it did.
func (r *reconciler) install(ctx workflow.Context, sum act.Summary, force bool) error {
	p := &r.state.Progress
	ref := r.ref
	// Since this version, the components roll one at a time, and the status names the step.
	ordered := workflow.GetVersion(ctx, changeOrderedRollout, workflow.DefaultVersion, 1) == 1
	due := func(step string) bool {
		// A renewal changes no CRD or object inside the control plane (the CA stays).
		forced := force && !(r.renewing && step == act.StepInitControlPlane)
		return forced || p.Done[step] != sum.Hashes[step]
	}
	progressing := func(what string) error {
		r.setPhase(ctx, PhaseInstalling)
		message := "installing generation " + strconv.FormatInt(sum.Generation, 10)
		if ordered {
			message = r.progressMessage(sum.Generation, what)
		}
		return r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonProgressing,
			Message: message, AdminConfig: p.Done[act.StepWriteAdminKubeconfig] != ""})
	}
	run := func(step string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
		if !due(step) {
			return nil
		}
		if what := describeStep(step, sum.Components); ordered && what != "" {
			r.state.Rolling = what
			if err := progressing(what); err != nil {
				return err
			}
		} else if r.state.Phase != PhaseInstalling {
			if err := progressing(r.state.Rolling); err != nil {
				return err
			}
		}
		if err := r.execute(ctx, step, opts, fn, result, args...); err != nil {
			return err
		}
		p.Done[step] = sum.Hashes[step]
		return nil
	}
	certs := act.Certificates{CertHash: p.CertHash}
	loadBalancer := sum.ServiceType == "LoadBalancer"

	// 3. Namespace, then 2. certificates: the keys are written straight into Secrets of that
	// namespace (never into history), so it comes first (a remote host cluster may lack it).
	if err := run(act.StepEnsureNamespace, shortOptions, activities.EnsureNamespace, nil, ref); err != nil {
		return err
	}
	if err := run(act.StepGenerateCertificates, shortOptions, activities.GenerateCertificates, &certs, ref); err != nil {
		return err
	}
	p.CertHash = certs.CertHash
	// 4. etcd.
	if err := run(act.StepInstallEtcd, shortOptions, activities.InstallEtcd, nil, r.installInput()); err != nil {
		return err
	}
	if err := run(act.StepWaitEtcdReady, waitOptions, activities.WaitEtcdReady, nil, ref); err != nil {
		return err
	}
	// 5. API server, its Service (and load balancer), its readiness.
	if err := run(act.StepInstallAPIServer, shortOptions, activities.InstallAPIServer, &p.Service, r.installInput()); err != nil {
		return err
	}
	if due(act.StepWaitAPIServerReady) && r.state.Phase == PhaseInstalling {
		// Publish apiServerService as soon as the Service exists.
		if err := progressing(r.state.Rolling); err != nil {
			return err
		}
	}
	if loadBalancer {
		var address string
		if err := run(act.StepWaitLoadBalancer, loadBalancerOptions, activities.WaitLoadBalancer, &address, ref); err != nil {
			return err
		}
		if due(act.StepCertifyLoadBalancer) {
			if err := progressing(r.state.Rolling); err != nil {
				return err
			}
		}
		if err := run(act.StepCertifyLoadBalancer, shortOptions, activities.CertifyLoadBalancer, &certs, act.LoadBalancerInput{Ref: ref, Address: address}); err != nil {
			return err
		}
		p.CertHash = certs.CertHash
	}
	if err := run(act.StepWaitAPIServerReady, waitOptions, activities.WaitAPIServerReady, nil, ref); err != nil {
		return err
	}
	// 6. Admin kubeconfig (and one per component).
	if err := run(act.StepWriteAdminKubeconfig, shortOptions, activities.WriteAdminKubeconfig, &p.Endpoint, ref); err != nil {
		return err
	}
	// 7. Aggregated API server, then the objects inside the new control plane.
	if err := run(act.StepInstallAggregatedAPIServer, shortOptions, activities.InstallAggregatedAPIServer, nil, r.installInput()); err != nil {
		return err
	}
	if err := run(act.StepWaitAggregatedAPIServerReady, waitOptions, activities.WaitAggregatedAPIServerReady, nil, ref); err != nil {
		return err
	}
	if err := run(act.StepInitControlPlane, controlPlaneOptions, activities.InitControlPlane, nil, ref); err != nil {
		return err
	}
	// 8. Components.
	if ordered {
		return r.rollComponents(ctx, sum, run)
	}
	var installed []string
	if err := run(act.StepInstallComponents, shortOptions, activities.InstallComponents, &installed, r.installInput()); err != nil {
		return err
	}
	return run(act.StepWaitComponentsReady, waitOptions, activities.WaitComponentsReady, nil, ref)
}

func (r *reconciler) installInput() act.InstallInput {
	return act.InstallInput{Ref: r.ref, CertHash: r.state.Progress.CertHash}
}

// changeOrderedRollout versions rolling the components one at a time, each to completion
// before the next starts, with the status naming the one rolling (before, all were applied
// at once and then awaited together).
const changeOrderedRollout = "ordered-rollout"

// rollComponents applies each component and waits for its rollout before the next, then
// removes the components the spec no longer names. The first install starts them all before
// it waits: nothing runs yet that an order would protect.
func (r *reconciler) rollComponents(ctx workflow.Context, sum act.Summary, run func(string, workflow.ActivityOptions, any, any, ...any) error) error {
	input := func(c string) act.ComponentInput {
		return act.ComponentInput{Ref: r.ref, Component: c, CertHash: r.state.Progress.CertHash}
	}
	install := func(c string) error {
		return run(act.ComponentStep(act.StepInstallComponent, c), shortOptions, activities.InstallComponent, nil, input(c))
	}
	wait := func(c string) error {
		return run(act.ComponentStep(act.StepWaitComponentReady, c), waitOptions, activities.WaitComponentReady, nil, input(c))
	}
	oneByOne := r.installedOnce()
	for _, c := range sum.Components {
		if err := install(c); err != nil {
			return err
		}
		if oneByOne {
			if err := wait(c); err != nil {
				return err
			}
		}
	}
	if !oneByOne {
		for _, c := range sum.Components {
			if err := wait(c); err != nil {
				return err
			}
		}
	}
	return run(act.StepRemoveOldComponents, shortOptions, activities.RemoveOldComponents, nil, r.ref)
}

// installedOnce tells whether the instance was Ready once (a workflow from before
// certificate renewal knows it by its last step): from then on, passes roll out changes.
func (r *reconciler) installedOnce() bool {
	p := r.state.Progress
	return p.Completed || p.Done[act.StepWaitComponentsReady] != ""
}

// describeStep says what an install step does, for the status; empty for the steps that
// only wait for or follow another.
func describeStep(step string, components []string) string {
	switch step {
	case act.StepGenerateCertificates:
		return "issuing certificates"
	case act.StepInstallEtcd:
		return "rolling etcd"
	case act.StepInstallAPIServer:
		return "rolling karmada-apiserver"
	case act.StepInstallAggregatedAPIServer:
		return "rolling karmada-aggregated-apiserver"
	case act.StepInitControlPlane:
		return "applying the CRDs and objects of the control plane"
	}
	for i, c := range components {
		if step == act.ComponentStep(act.StepInstallComponent, c) {
			return "rolling " + c + " (component " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(components)) + ")"
		}
	}
	return ""
}

// progressMessage is the status message of a pass that installs or rolls out generation:
// "installing" until the instance was first Ready, "rolling out" after, and "renewing
// certificates" when the renewal timer started it.
func (r *reconciler) progressMessage(generation int64, what string) string {
	verb := "installing"
	if r.installedOnce() {
		verb = "rolling out"
	}
	message := verb + " generation " + strconv.FormatInt(generation, 10)
	if r.renewing {
		message = "renewing certificates (generation " + strconv.FormatInt(generation, 10) + ")"
	}
	if what != "" {
		message += ": " + what
	}
	return message
}
