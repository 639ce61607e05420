package podrunner

import (
	"context"
	"errors"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The sync loop: every change of a played pod, of its Secrets and ConfigMaps, or of its
// containers' state queues the pod; sync brings it in line.

func (r *Runner) enqueueNamespace(namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, p := range r.played {
		if p.namespace == namespace {
			r.queue.Add(key)
		}
	}
}

func (r *Runner) processNext() bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(key); err != nil {
		if !apierrors.IsConflict(err) && r.ctx.Err() == nil {
			r.logf("%s: %v", key, err)
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync brings the played pod key in line with its object: it starts playing a new pod,
// refreshes its volumes, ends a deleted one and writes the status.
func (r *Runner) sync(key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, err := r.pods.Pods(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.mu.Lock()
	p := r.played[key]
	r.mu.Unlock()
	if p != nil && (obj == nil || obj.UID != p.uid) {
		// Deleted without us (force deletion) or replaced: end it at once.
		p.stop(0)
		r.forget(p)
		p = nil
	}
	switch {
	case obj == nil:
		return nil
	case obj.DeletionTimestamp != nil:
		if p == nil { // never played here (the runner started after it): nothing to end
			return r.deleteNow(obj)
		}
		r.terminate(p, obj)
		return nil
	case p == nil:
		if p, err = r.play(obj); err != nil {
			return err
		}
	}
	p.refresh(obj)
	return r.writeStatus(obj, p)
}

// play starts playing a pod: its address, directory and hosts file; the containers start
// once its volumes are written.
func (r *Runner) play(obj *corev1.Pod) (*pod, error) {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return nil, errors.New("stopping")
	}
	r.mu.Unlock()
	addr, err := r.addresses.allocate(obj)
	if err != nil {
		return nil, err
	}
	p, err := newPod(r, obj, addr)
	if err != nil {
		r.addresses.release(addr)
		return nil, err
	}
	r.mu.Lock()
	r.played[p.key] = p
	r.mu.Unlock()
	r.hosts.refresh()
	r.logf("playing pod %s at %s (pod IP %s)", p.key, addr.loopback, addr.podIP)
	return p, nil
}

// terminate ends a deleted pod's processes within its grace period, then deletes it for
// good, as the kubelet does.
func (r *Runner) terminate(p *pod, obj *corev1.Pod) {
	if !p.markTerminating() {
		return
	}
	r.hosts.changed()
	grace := 30 * time.Second
	if s := obj.DeletionGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	r.ending.Go(func() {
		p.stop(grace)
		if err := r.deleteNow(obj); err != nil && r.ctx.Err() == nil {
			r.logf("delete pod %s: %v", p.key, err)
		}
		r.forget(p)
		r.logf("pod %s ended", p.key)
	})
}

// deleteNow removes a pod whose processes have ended.
func (r *Runner) deleteNow(obj *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(obj.UID))}
	err := r.opts.Client.CoreV1().Pods(obj.Namespace).Delete(ctx, obj.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or a new pod of the same name
	}
	return err
}

// forget drops a pod whose processes have ended: its address and its directory (its logs
// stay).
func (r *Runner) forget(p *pod) {
	r.mu.Lock()
	if r.played[p.key] == p {
		delete(r.played, p.key)
	}
	r.mu.Unlock()
	r.addresses.release(p.addr)
	if err := os.RemoveAll(p.dir); err != nil {
		r.logf("remove %s: %v", p.dir, err)
	}
	r.hosts.changed()
}

// playedPods returns the pods being played.
func (r *Runner) playedPods() []*pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*pod, 0, len(r.played))
	for _, p := range r.played {
		out = append(out, p)
	}
	return out
}

// changed is called by a pod whose state changed: its status is written again, and hosts
// files and Service endpoints follow its readiness.
func (r *Runner) changed(p *pod) {
	r.queue.Add(p.key)
	r.hosts.changed()
}
