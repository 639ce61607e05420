package podrunner

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The runner writes the status of its pods as their kubelet: phase, addresses, start time,
// container statuses and the conditions that follow from them. Conditions others own
// (PodScheduled, DisruptionTarget...) are kept as they are.

// writeStatus writes the pod's status if it differs from the object's. A conflict is
// returned: the pod is synced again with the newer object.
func (r *Runner) writeStatus(obj *corev1.Pod, p *pod) error {
	status := p.status(obj)
	if apiequality.Semantic.DeepEqual(obj.Status, status) {
		return nil
	}
	updated := obj.DeepCopy()
	updated.Status = status
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	_, err := r.opts.Client.CoreV1().Pods(obj.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// status is the pod's status as the runner sees it now.
func (p *pod) status(obj *corev1.Pod) corev1.PodStatus {
	s := *obj.Status.DeepCopy()
	s.HostIP = p.r.opts.NodeIP
	s.HostIPs = []corev1.HostIP{{IP: p.r.opts.NodeIP}}
	s.PodIP = p.addr.podIP
	s.PodIPs = []corev1.PodIP{{IP: p.addr.podIP}}
	s.StartTime = &p.startTime

	p.mu.Lock()
	volumeErr, launched := p.volumeErr, p.launched
	p.mu.Unlock()
	allStarted, allReady := true, true
	s.ContainerStatuses = make([]corev1.ContainerStatus, len(p.containers))
	for i, c := range p.containers {
		st := c.snapshot()
		if !launched && volumeErr != nil {
			st.state = waiting("ContainerCreating", volumeErr.Error())
		}
		started := st.started && st.state.Running != nil
		s.ContainerStatuses[i] = corev1.ContainerStatus{
			Name:                 c.spec.Name,
			Image:                c.spec.Image,
			ImageID:              st.imageID,
			ContainerID:          st.id,
			State:                st.state,
			LastTerminationState: st.last,
			Ready:                st.ready,
			Started:              &started,
			RestartCount:         st.restarts,
		}
		allStarted = allStarted && st.id != "" // has run at least once
		allReady = allReady && st.ready
	}
	// Pending until every container has run once; with restartPolicy Always a pod whose
	// containers restart stays Running.
	s.Phase = corev1.PodPending
	if allStarted {
		s.Phase = corev1.PodRunning
	}
	setCondition(&s, corev1.PodReadyToStartContainers, launched)
	setCondition(&s, corev1.PodInitialized, true)
	setCondition(&s, corev1.ContainersReady, allReady)
	setCondition(&s, corev1.PodReady, allReady && gatesReady(obj))
	return s
}

// setCondition sets a condition's status, its transition time only when it changes.
func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, ok bool) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i, c := range s.Conditions {
		if c.Type != t {
			continue
		}
		if c.Status != status {
			s.Conditions[i] = corev1.PodCondition{Type: t, Status: status, LastTransitionTime: now()}
		}
		return
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: status, LastTransitionTime: now()})
}

// gatesReady reports whether every readiness gate's condition is True.
func gatesReady(obj *corev1.Pod) bool {
	for _, gate := range obj.Spec.ReadinessGates {
		ok := false
		for _, c := range obj.Status.Conditions {
			ok = ok || (c.Type == gate.ConditionType && c.Status == corev1.ConditionTrue)
		}
		if !ok {
			return false
		}
	}
	return true
}
