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
	due := func(step string) bool { return force || p.Done[step] != sum.Hashes[step] }
	progressing := func() error {
		r.setPhase(ctx, PhaseInstalling)
		return r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonProgressing,
			Message: "installing generation " + strconv.FormatInt(sum.Generation, 10), AdminConfig: p.Done[act.StepWriteAdminKubeconfig] != ""})
	}
	run := func(step string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
		if !due(step) {
			return nil
		}
		if r.state.Phase != PhaseInstalling {
			if err := progressing(); err != nil {
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
		if err := progressing(); err != nil {
			return err
		}
	}
	if loadBalancer {
		var address string
		if err := run(act.StepWaitLoadBalancer, loadBalancerOptions, activities.WaitLoadBalancer, &address, ref); err != nil {
			return err
		}
		if due(act.StepCertifyLoadBalancer) {
			if err := progressing(); err != nil {
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
	var installed []string
	if err := run(act.StepInstallComponents, shortOptions, activities.InstallComponents, &installed, r.installInput()); err != nil {
		return err
	}
	return run(act.StepWaitComponentsReady, waitOptions, activities.WaitComponentsReady, nil, ref)
}

func (r *reconciler) installInput() act.InstallInput {
	return act.InstallInput{Ref: r.ref, CertHash: r.state.Progress.CertHash}
}
