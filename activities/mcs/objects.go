package mcs

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// lastSeen keeps the MultiClusterService objects this process last read or wrote, so that
// an update right after a read needs no second read. A stale copy (another worker wrote
// since) costs a fresh read, never a wrong outcome: every update carries the copy's
// resourceVersion, so a stale one meets a Conflict, and a change that finds nothing to do in
// the copy is decided again on a fresh read.
type lastSeen struct {
	mu   sync.Mutex
	objs map[Ref]*unstructured.Unstructured
}

func (l *lastSeen) get(ref Ref) *unstructured.Unstructured {
	l.mu.Lock()
	defer l.mu.Unlock()
	if obj := l.objs[ref]; obj != nil {
		return obj.DeepCopy()
	}
	return nil
}

func (l *lastSeen) put(ref Ref, obj *unstructured.Unstructured) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.objs == nil {
		l.objs = map[Ref]*unstructured.Unstructured{}
	}
	if obj == nil {
		delete(l.objs, ref)
		return
	}
	l.objs[ref] = obj.DeepCopy()
}

// updateMCS applies change to the MultiClusterService, starting from the copy last seen (or
// a fresh read) and reading afresh once on a Conflict, or when the copy leaves nothing to
// write. change returns the object written, or nil when there is nothing to write. A
// MultiClusterService that is gone is not an error.
func (a *Activities) updateMCS(ctx context.Context, ref Ref, change func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) error {
	client := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace)
	obj := a.seen.get(ref)
	fromCache := obj != nil
	for {
		if obj == nil {
			var err error
			obj, err = client.Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				a.seen.put(ref, nil)
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading MultiClusterService %s: %w", ref, err)
			}
			a.seen.put(ref, obj)
		}
		written, err := change(obj)
		switch {
		case err == nil && written == nil && fromCache:
			obj, fromCache = nil, false // nothing to do as far as the copy shows: make sure
		case err == nil:
			if written != nil {
				a.seen.put(ref, written)
			}
			return nil
		case apierrors.IsNotFound(err):
			a.seen.put(ref, nil)
			return nil
		case apierrors.IsConflict(err) && fromCache:
			obj, fromCache = nil, false // the copy was stale: read and try once more
		default:
			return err
		}
	}
}

// observedServices hands the Service that ObserveMCS read to the PropagateService that follows
// it in the same reconcile, which then needs no second read. A copy is used once, and only
// while fresh: a later change of the Service signals another reconcile anyway.
type observedServices struct {
	mu   sync.Mutex
	svcs map[Ref]observedService
}

type observedService struct {
	svc  *corev1.Service
	read time.Time
}

// serviceReuse is how long a Service read by ObserveMCS may stand in for a fresh read.
const serviceReuse = 5 * time.Second

func (o *observedServices) put(ref Ref, svc *corev1.Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.svcs == nil {
		o.svcs = map[Ref]observedService{}
	}
	o.svcs[ref] = observedService{svc: svc, read: time.Now()}
}

// take returns the Service observed for ref within serviceReuse, once; nil otherwise.
func (o *observedServices) take(ref Ref) *corev1.Service {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen, ok := o.svcs[ref]
	delete(o.svcs, ref)
	if !ok || time.Since(seen.read) > serviceReuse {
		return nil
	}
	return seen.svc
}
