package mcs

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Service propagation: the Service's Work in the execution namespace of exactly the clusters
// given.

// PropagateService makes the Service's Work exist in the execution namespace of exactly the
// given clusters.
func (a *Activities) PropagateService(ctx context.Context, in PropagateServiceInput) (WorkWriteResult, error) {
	return WorkWriteResult{WorkCache: a.WorkCache.Instance()}, a.Metrics.count("propagate", a.propagateService(ctx, in))
}

func (a *Activities) propagateService(ctx context.Context, in PropagateServiceInput) error {
	start := time.Now()
	// Claimed before it is propagated: the Work then carries the claim, and Karmada's detector
	// leaves the Service to the MultiClusterService.
	svc, err := a.claimService(ctx, in.MCS, a.services.take(in.MCS))
	if err != nil {
		return err
	}
	manifest, err := serviceManifest(svc, in.Ports)
	if err != nil {
		return err
	}
	workName := naming.WorkName("Service", svc.Name, svc.Namespace)
	desired := map[string]*unstructured.Unstructured{}
	for _, cluster := range in.Clusters {
		// As upstream's MultiClusterService, the Service overwrites one a member holds already
		// (a provider's own): Karmada's execution controller leaves such an object alone otherwise.
		desired[naming.ExecutionNamespace(cluster)] = newWork(workName, naming.ExecutionNamespace(cluster),
			workLabels(in.MCS, naming.RoleService), serviceWorkAnnotations, false, manifest)
	}
	if err := a.syncServiceWorks(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), desired, in.Unready); err != nil {
		return err
	}
	a.Metrics.observeServiceSync(time.Since(earliest(in.DetectedAt, start)))
	return nil
}

var serviceWorkAnnotations = map[string]string{naming.AnnotationConflictResolution: naming.ConflictResolutionOverwrite}

// syncServiceWorks makes the Service Works of the MultiClusterService exactly the desired ones
// (keyed by namespace), in any namespace.
func (a *Activities) syncServiceWorks(ctx context.Context, ref Ref, othersWroteBefore time.Time, desired map[string]*unstructured.Unstructured, unready []string) error {
	works, err := a.listWorks(ctx, ref, othersWroteBefore, naming.RoleService)
	if err != nil {
		return err
	}
	_, err = a.applyWorkSync(ctx, planWorkSync(works, sortedWorks(desired), nil), unready)
	return err
}
