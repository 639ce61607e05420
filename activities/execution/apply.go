package execution

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The apply-and-stamp protocol: each manifest server-side applied, labelled with its Work and
// stamped with the Work's uid and generation.

// applyAll server-side-applies every manifest of the Work to the member; works is the Work's
// namespace in the control plane, listed the member objects a full pass read (or nil).
func applyAll(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, manifests []*unstructured.Unstructured, listed listedObjects, written *WrittenVersions) error {
	var applyErr error
	for _, m := range manifests {
		if err := apply(ctx, member, works, work, m, listed, written); err != nil {
			applyErr = errors.Join(applyErr, err)
		}
	}
	return applyErr
}

// applyAttempts bounds the reads and writes of one manifest when the object keeps changing
// between them.
const applyAttempts = 3

// apply server-side-applies one manifest to the member, labelled with its Work so that only
// objects karmadaflow created are ever deleted, and stamped with the Work's uid and generation.
// An object that exists there already and that karmadaflow did not create (a provider's own
// Service, say) is left exactly as it is (see foreign). Two appliers may bring the same Work
// into a member at once (Work execution, and the writer of the Work): an object that holds a
// later generation of the Work is left as it is, and the write is conditional on the object
// read, so the member never goes back to an older generation. An object read as absent is
// created, not applied: the read may be stale, and a create fails where an apply would adopt
// what someone else created meanwhile. The stamp of a later generation is believed only as far
// as the Work in the control plane bears it out (believeStamp). An object still as this process
// last wrote it for the same generation of the Work is left alone (WrittenVersions).
func apply(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work, manifest *unstructured.Unstructured, listed listedObjects, written *WrittenVersions) error {
	client, err := resourceFor(member, manifest)
	if err != nil {
		return err
	}
	// The first read is the full pass's list (listed), or served from the API server's watch
	// cache, at a fraction of a quorum read's cost: the write is conditional on it, so a read a
	// moment old costs a conflict and a fresh read, never a wrong write. An object the list
	// does not hold is read by name, as it may be someone else's.
	read := metav1.GetOptions{ResourceVersion: "0"}
	for attempt := 1; ; attempt++ {
		current := listed.get(manifest)
		var err error
		if current == nil || attempt > 1 {
			current, err = client.Get(ctx, manifest.GetName(), read)
		}
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return fmt.Errorf("cluster %s: reading %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
		case current.GetLabels()[naming.LabelWorkName] == "":
			return foreign(member, manifest) // not ours: never modified, never deleted
		case !ownedBy(current, work):
			return fmt.Errorf("cluster %s: %s %s/%s belongs to Work %s/%s", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(),
				current.GetLabels()[naming.LabelWorkNamespace], current.GetLabels()[naming.LabelWorkName])
		case written.unchanged(member.Name, current, work):
			return nil
		case holdsLaterGeneration(current, work):
			latest, err := works.Get(ctx, work.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil // the Work is gone: nothing of it to bring in
			case err != nil:
				return fmt.Errorf("reading Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
			case believeStamp(current, work, latest):
				return nil
			}
		}
		out, err := write(ctx, member, client, stamped(manifest, work, current), current)
		if err == nil {
			written.wrote(member.Name, out)
		}
		if !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) || attempt == applyAttempts {
			return err
		}
		read = metav1.GetOptions{}
	}
}

// stamped is the manifest as applied for work: labelled with the Work, stamped with its uid and
// generation, and, when the object exists (current), conditional on its resourceVersion.
func stamped(manifest, work, current *unstructured.Unstructured) *unstructured.Unstructured {
	obj := manifest.DeepCopy()
	lbls := obj.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[naming.LabelWorkName] = work.GetName()
	lbls[naming.LabelWorkNamespace] = work.GetNamespace()
	obj.SetLabels(lbls)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[naming.AnnotationWorkUID] = string(work.GetUID())
	annotations[naming.AnnotationWorkGeneration] = strconv.FormatInt(work.GetGeneration(), 10)
	obj.SetAnnotations(annotations)
	version := ""
	if current != nil {
		version = current.GetResourceVersion()
	}
	obj.SetResourceVersion(version)
	return obj
}

// foreign answers for an object of the manifest's name that karmadaflow did not create. It is
// left as it is either way. A manifest that says conflict resolution overwrite (the Service of
// a MultiClusterService, whose providers hold their own) counts it as applied; any other
// reports the conflict, as Karmada's default (abort) does, so that the Work's Applied
// condition, and the MultiClusterService conditions that follow it, say why.
func foreign(member *members.Member, manifest *unstructured.Unstructured) error {
	if manifest.GetAnnotations()[naming.AnnotationConflictResolution] == naming.ConflictResolutionOverwrite {
		return nil
	}
	return fmt.Errorf("cluster %s: %s %s/%s exists and was not created by karmadaflow: left as it is, not adopted",
		member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName())
}

// write creates obj when it was read as absent (current is nil), else applies it over current,
// on its version, and returns the object written; the first object of a namespace the member
// lacks creates it (Karmada propagates namespaces to its members, karmadaflow does not).
func write(ctx context.Context, member *members.Member, client dynamic.ResourceInterface, obj, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	put := func() (*unstructured.Unstructured, error) {
		if current == nil {
			return kube.Create(ctx, client, obj)
		}
		return kube.ApplyOver(ctx, client, obj, current)
	}
	out, err := put()
	if apierrors.IsNotFound(err) && obj.GetNamespace() != "" {
		if err = ensureNamespace(ctx, member, obj.GetNamespace()); err == nil {
			out, err = put()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", member.Name, err)
	}
	return out, nil
}

// holdsLaterGeneration tells whether the object in the member was applied from a later
// generation of the same Work (same uid) than work.
func holdsLaterGeneration(obj, work *unstructured.Unstructured) bool {
	uid, generation := appliedFrom(obj)
	return uid != "" && uid == string(work.GetUID()) && generation > work.GetGeneration()
}

// believeStamp tells whether obj, stamped with a later generation of work than work's own, is
// to be left as it is, given latest, the Work as the control plane has it now.
// The stamp is a member object's annotation, which whoever may write there can set: believed
// blindly, "999999" would freeze the object for good. A true stamp is at most one generation
// beyond latest, as only ApplyWhileWriting applies a generation ahead of its record, and only
// the next one. A stamp beyond that is redone, by the applier holding the Work's latest
// generation (or the next one): an older one leaves it to that applier.
func believeStamp(obj, work, latest *unstructured.Unstructured) bool {
	if latest.GetUID() != work.GetUID() || latest.GetGeneration() > work.GetGeneration() {
		return true
	}
	_, stamp := appliedFrom(obj)
	return stamp <= latest.GetGeneration()+1
}

// appliedFrom reads the stamp of the Work an object was applied from: empty when it has none.
func appliedFrom(obj *unstructured.Unstructured) (uid string, generation int64) {
	annotations := obj.GetAnnotations()
	generation, _ = strconv.ParseInt(annotations[naming.AnnotationWorkGeneration], 10, 64)
	return annotations[naming.AnnotationWorkUID], generation
}

// ensureNamespace creates namespace in the member if it does not exist.
func ensureNamespace(ctx context.Context, member *members.Member, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{naming.LabelCreatedBy: naming.FieldManager}}}
	_, err := member.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: naming.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}

func resourceFor(member *members.Member, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := member.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		member.Mapper.Reset()
		return nil, fmt.Errorf("cluster %s: no resource for %s: %w", member.Name, gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return member.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return member.Dynamic.Resource(mapping.Resource), nil
}

// ownedBy tells whether the object in the member is labelled with work's name.
func ownedBy(obj, work *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[naming.LabelWorkName] == work.GetName() && l[naming.LabelWorkNamespace] == work.GetNamespace()
}
