package mcs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
)

// Observing a MultiClusterService: the object, whether its Service exists, and the Clusters.

// ObserveMCS reads the MultiClusterService, whether its Service exists, and the Clusters.
func (a *Activities) ObserveMCS(ctx context.Context, ref Ref) (Observation, error) {
	res, err := a.observeMCS(ctx, ref)
	res.WorkCache = a.WorkCache.Instance()
	return res, a.Metrics.count("observe", err)
}

func (a *Activities) observeMCS(ctx context.Context, ref Ref) (Observation, error) {
	var obs Observation
	obj, err := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.seen.put(ref, nil)
		return obs, nil
	}
	if err != nil {
		return obs, fmt.Errorf("reading MultiClusterService %s: %w", ref, err)
	}
	a.seen.put(ref, obj)
	var mcs networkingv1alpha1.MultiClusterService
	if err := kube.FromUnstructured(obj, &mcs); err != nil {
		return obs, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidObject", err)
	}
	obs.Exists = true
	obs.Deleting = mcs.DeletionTimestamp != nil
	obs.HasFinalizer = slices.Contains(mcs.Finalizers, networkingv1alpha1.Finalizer)
	obs.Generation = mcs.Generation
	obs.Invalid = Validate(&mcs)
	obs.CrossCluster = hasType(mcs.Spec.Types, TypeCrossCluster)
	for _, p := range mcs.Spec.Ports {
		obs.Ports = append(obs.Ports, PortFilter{Name: p.Name, Port: p.Port})
	}
	obs.Providers, obs.Consumers = mcs.Spec.ClusterLists()
	obs.UnhealthyGrace = a.UnhealthyGrace
	obs.KarmadaAgents = a.Execution == nil

	svc, err := a.Core.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		obs.ServiceExists = true
		a.services.put(ref, svc)
	case !apierrors.IsNotFound(err):
		return obs, fmt.Errorf("reading Service %s: %w", ref, err)
	}

	var ignored []string
	obs.Clusters, ignored, err = a.clusters(ctx)
	if len(ignored) > 0 && a.Events != nil {
		a.Events.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonClusterIgnored, eventActionReconcile, "%s",
			truncate(fmt.Sprintf("Clusters ignored, their names are not DNS labels of at most %d characters: %s", MaxClusterNameLength, strings.Join(ignored, ", ")), maxEventNote))
	}
	return obs, err
}

// clusters are the Clusters and whether each is Ready. Those whose names cannot name an
// execution namespace (karmada-es-<name>) or a label value are ignored: the CRD refuses them,
// but one created before that rule would stop every Work write of the MultiClusterService.
func (a *Activities) clusters(ctx context.Context) (states []ClusterState, ignored []string, err error) {
	list, err := a.ControlPlane.Resource(kube.Clusters).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing Clusters: %w", err)
	}
	out := make([]ClusterState, 0, len(list.Items))
	for i := range list.Items {
		state, ok := ClusterStateOf(&list.Items[i])
		if !ok {
			ignored = append(ignored, list.Items[i].GetName())
			continue
		}
		out = append(out, state)
	}
	slices.SortFunc(out, func(x, y ClusterState) int { return cmp.Compare(x.Name, y.Name) })
	return out, ignored, nil
}

// ClusterStateOf is what an observation holds of a Cluster: its name, whether it is Ready and
// since when, and whether it is in Pull mode. ok is false for a Cluster whose name cannot name
// an execution namespace or a label value, which observations ignore.
func ClusterStateOf(cluster *unstructured.Unstructured) (state ClusterState, ok bool) {
	name := cluster.GetName()
	if len(name) > MaxClusterNameLength || len(validation.IsDNS1123Label(name)) > 0 {
		return ClusterState{}, false
	}
	state = ClusterState{Name: name, Pull: members.IsPullCluster(cluster)}
	conds, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
	for _, c := range conds {
		cond, _ := c.(map[string]any)
		if cond["type"] != "Ready" {
			continue
		}
		state.Ready = cond["status"] == "True"
		if ts, ok := cond["lastTransitionTime"].(string); ok {
			state.Since, _ = time.Parse(time.RFC3339, ts)
		}
	}
	return state, true
}
