package execution

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The API the MultiClusterService activities call (their WorkApplier): one Work executed at
// once, or an update applied while it is written.

// ApplyWork executes one Work of the cluster's execution namespace as ApplyWorks does: its
// manifests are applied to the member (or removed, when it is being deleted) and its Applied
// condition is written. Activities that write a Work call it to have it applied at once; the
// execution workflow remains the reconciler of what this leaves undone.
func (a *Activities) ApplyWork(ctx context.Context, cluster string, work *unstructured.Unstructured) error {
	member, err := a.Members.Get(ctx, cluster)
	if err != nil {
		return err
	}
	works := a.ControlPlane.Resource(kube.Works).Namespace(naming.ExecutionNamespace(cluster))
	_, err = a.execute(ctx, member, works, work.DeepCopy(), nil)
	return err
}

// ApplyWhileWriting brings an update of a Work into the member while write records that
// update in the control plane, then records Applied on the Work as written: the member does
// not wait for the control plane's write. held is the Work as last read: the update is applied
// as its next generation, and again as written should the write say otherwise. ctx bounds the
// member's side; write carries its own. It is for a Work the member holds objects of already,
// under execution's finalizer: should the write fail, the member is ahead of its Work until the
// writer writes it again, and Work execution, which applies what the Work holds, stays the
// reconciler of last resort.
func (a *Activities) ApplyWhileWriting(ctx context.Context, cluster string, held, work *unstructured.Unstructured, write func() (*unstructured.Unstructured, error)) (written *unstructured.Unstructured, writeErr, applyErr error) {
	manifests, err := manifestsOf(work)
	if err != nil { // nothing to apply ahead of the record: written, then executed as usual
		if written, writeErr = write(); writeErr == nil {
			applyErr = a.ApplyWork(ctx, cluster, written)
		}
		return written, writeErr, applyErr
	}
	next := work.DeepCopy()
	next.SetUID(held.GetUID())
	next.SetGeneration(held.GetGeneration() + 1)
	works := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace())
	var member *members.Member
	done := make(chan struct{})
	go func() {
		defer close(done)
		if member, applyErr = a.Members.Get(ctx, cluster); applyErr == nil {
			applyErr = applyAll(ctx, member, works, next, manifests, nil, a.Written)
		}
	}()
	written, writeErr = write()
	<-done
	if writeErr != nil || member == nil {
		return written, writeErr, applyErr
	}
	if applyErr == nil && (written.GetUID() != next.GetUID() || written.GetGeneration() != next.GetGeneration()) {
		applyErr = applyAll(ctx, member, works, written, manifests, nil, a.Written) // stamped as written
	}
	return written, nil, a.record(ctx, member, works, written, manifests, applyErr)
}
