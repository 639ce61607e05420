package execution

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Status write-back: the Work's Applied condition and manifest statuses, written when they
// change, and the outcome counted.

// Reasons of a Work's Applied condition (Karmada's).
const (
	ReasonAppliedSuccessful = "AppliedSuccessful"
	ReasonAppliedFailed     = "AppliedFailed"
)

// record writes the Work's Applied condition for the outcome of applying its manifests and
// counts it; it returns the apply's error, or the status write's.
func (a *Activities) record(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, manifests []*unstructured.Unstructured, applyErr error) error {
	written, err := a.writeStatus(ctx, member, works, work, manifests, applyErr)
	if err != nil {
		return err
	}
	if applyErr != nil {
		a.Metrics.countError(member.Name, applyErr)
	} else if written {
		a.Metrics.observePropagation(member.Name, work.GetAnnotations()[naming.AnnotationDetectedAt])
	}
	return applyErr
}

// writeStatus records the Applied condition and manifest statuses, unless they already say so,
// and reports whether it wrote.
func (a *Activities) writeStatus(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, manifests []*unstructured.Unstructured, applyErr error) (bool, error) {
	cond := metav1.Condition{
		Type: "Applied", Status: metav1.ConditionTrue, Reason: ReasonAppliedSuccessful,
		Message: "Manifest has been successfully applied", ObservedGeneration: work.GetGeneration(),
	}
	if applyErr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonAppliedFailed, applyErr.Error()
	}
	var status struct {
		Conditions       []metav1.Condition `json:"conditions,omitempty"`
		ManifestStatuses []any              `json:"manifestStatuses,omitempty"`
	}
	if raw, ok, _ := unstructured.NestedMap(work.Object, "status"); ok {
		if err := kube.FromUnstructured(&unstructured.Unstructured{Object: raw}, &status); err != nil {
			return false, err
		}
	}
	if current := meta.FindStatusCondition(status.Conditions, "Applied"); current != nil &&
		current.Status == cond.Status && current.ObservedGeneration == cond.ObservedGeneration && current.Message == cond.Message {
		return false, nil
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ManifestStatuses = status.ManifestStatuses[:0]
	for i, m := range manifests {
		gvk := m.GroupVersionKind()
		plural, _ := meta.UnsafeGuessKindToResource(gvk) // for kinds the member does not serve
		resource := plural.Resource
		if mapping, err := member.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			resource = mapping.Resource.Resource
		}
		status.ManifestStatuses = append(status.ManifestStatuses, map[string]any{"identifier": map[string]any{
			"ordinal": int64(i), "group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind,
			"resource": resource, "namespace": m.GetNamespace(), "name": m.GetName(),
		}})
	}
	statusMap, err := kube.ToUnstructured(&status)
	if err != nil {
		return false, err
	}
	updated := work.DeepCopy()
	updated.Object["status"] = statusMap.Object
	written, err := works.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if apierrors.IsNotFound(err) {
		return false, nil // gone: it has no status to write
	}
	if err != nil {
		return false, fmt.Errorf("writing status of Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Wrote(written) // a read of the MultiClusterService's Works in this process shows it
	return true, nil
}
