package provisioning

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// waitReady polls until the rollout of each component components(k) lists is complete,
// heartbeating what it waits for.
func (a *Activities) waitReady(ctx context.Context, ref Ref, components func(*operatorv1alpha1.Karmada) []Component) error {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return err
	}
	pending := components(k)
	for len(pending) > 0 {
		c := pending[0]
		done, progress, err := t.rolledOut(ctx, k, c)
		if err != nil {
			return err
		}
		if done {
			pending = pending[1:]
			continue
		}
		if err := a.pause(ctx, c.Name+": "+progress); err != nil {
			return err
		}
	}
	return nil
}

// rolledOut reports whether the workload of c has completed its rollout and, if not, how far
// it is. One Ready pod is not enough: a pod of the previous revision may be the Ready one,
// and a spec change only counts once the controller has seen it.
func (t *target) rolledOut(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) (bool, string, error) {
	name := NamesFor(k.Name).Of(c.Suffix)
	if c.Field == Etcd.Field {
		sts, err := t.kube.AppsV1().StatefulSets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "StatefulSet " + name + " not found", nil
		}
		if err != nil {
			return false, "", fmt.Errorf("reading StatefulSet %s/%s: %w", k.Namespace, name, err)
		}
		done, progress := statefulSetRolledOut(sts)
		return done, progress, nil
	}
	d, err := t.kube.AppsV1().Deployments(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "Deployment " + name + " not found", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("reading Deployment %s/%s: %w", k.Namespace, name, err)
	}
	done, progress := deploymentRolledOut(d)
	if !done && progressDeadlineExceeded(d) {
		return false, "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("the rollout of %s failed: %s%s",
			c.Name, progress, t.podTrouble(ctx, k, c)), ErrRolloutFailed, nil)
	}
	return done, progress, nil
}

// ErrRolloutFailed is the ApplicationError type of a rollout that made no progress within
// its deadline: the workflow reports it and retries later; a fixed spec rolls again.
const ErrRolloutFailed = "RolloutFailed"

// progressDeadlineExceeded reports whether the Deployment's controller gave up waiting for
// the rollout of the current generation to progress.
func progressDeadlineExceeded(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentProgressing {
			return cond.Status == corev1.ConditionFalse && cond.Reason == "ProgressDeadlineExceeded"
		}
	}
	return false
}

// podTrouble describes why a pod of c is not ready ("; pod p: container x: CrashLoopBackOff:
// ..."), for the message of a failed rollout; empty when no pod says.
func (t *target) podTrouble(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) string {
	pods, err := t.kube.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector(k.Name, c)).String()})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				return fmt.Sprintf("; pod %s: container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)
			}
			if term := cs.LastTerminationState.Terminated; !cs.Ready && term != nil {
				return fmt.Sprintf("; pod %s: container %s exited with %d (%s), restarted %d times", p.Name, cs.Name, term.ExitCode, term.Reason, cs.RestartCount)
			}
		}
	}
	return ""
}

// deploymentRolledOut is `kubectl rollout status`'s test: the controller has observed the
// current generation, every desired replica is updated and ready, and no old one is left.
func deploymentRolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("generation %d not yet observed", d.Generation)
	case s.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas pending termination", s.Replicas-s.UpdatedReplicas)
	case s.ReadyReplicas < want || s.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d updated replicas ready", min(s.ReadyReplicas, s.AvailableReplicas), want)
	}
	return true, "rolled out"
}

// statefulSetRolledOut is the same test for a StatefulSet with the RollingUpdate strategy:
// every replica runs the update revision and is ready.
func statefulSetRolledOut(sts *appsv1.StatefulSet) (bool, string) {
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	s := sts.Status
	switch {
	case s.ObservedGeneration < sts.Generation:
		return false, fmt.Sprintf("generation %d not yet observed", sts.Generation)
	case s.UpdatedReplicas < want || (s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision):
		return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
	case s.ReadyReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)
	}
	return true, "rolled out"
}
