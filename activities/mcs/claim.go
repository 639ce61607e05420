package mcs

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The claim on the control plane's Service: while a MultiClusterService propagates it, the
// Service says so, as Karmada's own MultiClusterService controller has it say, so that
// Karmada's resource detector leaves it alone and no PropagationPolicy that matches it has
// Karmada's binding controller write a Work of the same name as the Service's Work.

// claimService claims the Service for the MultiClusterService, starting from svc (the copy
// ObserveMCS read; nil: a fresh read), and returns the Service as it is then. Only the
// claim's labels and annotations are written, by a merge patch conditional on the copy's
// resourceVersion: a concurrent change of the Service is never lost, and after one the claim
// is decided again on a fresh read. A Service claimed already is not written: the starter
// signals every change of a Service's labels, so a claim written on every pass would loop.
func (a *Activities) claimService(ctx context.Context, ref Ref, svc *corev1.Service) (*corev1.Service, error) {
	id, err := a.permanentID(ctx, ref)
	if err != nil {
		return nil, err
	}
	claimed, err := a.editService(ctx, ref, svc, func(s *corev1.Service) metadataEdit { return claimEdit(s, ref, id) })
	if err != nil {
		return nil, fmt.Errorf("claiming Service %s for its MultiClusterService: %w", ref, err)
	}
	return claimed, nil
}

// releaseService removes the claim of the MultiClusterService from its Service, once the
// MultiClusterService no longer propagates it (deleted, not CrossCluster): a
// PropagationPolicy may propagate it then. A Service that is gone or that something else
// claims is left as it is.
func (a *Activities) releaseService(ctx context.Context, ref Ref) error {
	_, err := a.editService(ctx, ref, a.services.take(ref), releaseEdit)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing Service %s from its MultiClusterService: %w", ref, err)
	}
	return nil
}

// permanentID is the MultiClusterService's permanent ID (LabelMCSPermanentID, which
// karmada-webhook gives it), empty when it has none, from the copy ObserveMCS read.
func (a *Activities) permanentID(ctx context.Context, ref Ref) (string, error) {
	obj := a.seen.get(ref)
	if obj == nil {
		var err error
		if obj, err = a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
			return "", fmt.Errorf("reading MultiClusterService %s: %w", ref, err)
		}
	}
	return obj.GetLabels()[networkingv1alpha1.LabelMCSPermanentID], nil
}

// editService writes the edit that decide makes of the Service: from svc if given, else from
// a fresh read, and from a fresh read again after a Conflict. It returns the Service as
// written, or as read when there was nothing to write.
func (a *Activities) editService(ctx context.Context, ref Ref, svc *corev1.Service, decide func(*corev1.Service) metadataEdit) (*corev1.Service, error) {
	services := a.Core.CoreV1().Services(ref.Namespace)
	var out *corev1.Service
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if svc == nil {
			read, err := services.Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			svc = read
		}
		edit := decide(svc)
		if edit.empty() {
			out = svc
			return nil
		}
		patch, err := edit.mergePatch(svc.ResourceVersion)
		if err != nil {
			return err
		}
		written, err := services.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: naming.FieldManager})
		if err != nil {
			svc = nil // read afresh and decide again
			return err
		}
		out = written
		return nil
	})
	return out, err
}

// metadataEdit is a change of an object's labels and annotations: a key mapped to a string is
// set, one mapped to nil removed (JSON merge patch).
type metadataEdit struct {
	labels, annotations map[string]any
}

func (e metadataEdit) empty() bool { return len(e.labels) == 0 && len(e.annotations) == 0 }

// mergePatch is the edit as a JSON merge patch that the API server applies only to the object
// at resourceVersion (a Conflict otherwise).
func (e metadataEdit) mergePatch(resourceVersion string) ([]byte, error) {
	metadata := map[string]any{"resourceVersion": resourceVersion}
	if len(e.labels) > 0 {
		metadata["labels"] = e.labels
	}
	if len(e.annotations) > 0 {
		metadata["annotations"] = e.annotations
	}
	return json.Marshal(map[string]any{"metadata": metadata})
}

// set and drop add to edit what makes values hold key with value, or not hold key.
func set(edit map[string]any, values map[string]string, key, value string) {
	if current, ok := values[key]; !ok || current != value {
		edit[key] = value
	}
}

func drop(edit map[string]any, values map[string]string, key string) {
	if _, ok := values[key]; ok {
		edit[key] = nil
	}
}

// claimEdit is what makes the Service claimed by the MultiClusterService ref of permanent ID
// id (none when empty), as upstream's MultiClusterService controller claims it: the label
// claimed-by MultiClusterService and the permanent ID, the MultiClusterService's name and
// namespace as annotations, and a PropagationPolicy's or ClusterPropagationPolicy's claim
// removed.
func claimEdit(svc metav1.Object, ref Ref, id string) metadataEdit {
	labels, annotations := svc.GetLabels(), svc.GetAnnotations()
	edit := metadataEdit{labels: map[string]any{}, annotations: map[string]any{}}
	set(edit.labels, labels, naming.LabelClaimedBy, naming.ClaimedByMultiClusterService)
	if id != "" {
		set(edit.labels, labels, networkingv1alpha1.LabelMCSPermanentID, id)
	} else {
		drop(edit.labels, labels, networkingv1alpha1.LabelMCSPermanentID)
	}
	set(edit.annotations, annotations, networkingv1alpha1.AnnotationMCSName, ref.Name)
	set(edit.annotations, annotations, networkingv1alpha1.AnnotationMCSNamespace, ref.Namespace)
	for _, key := range []string{naming.LabelPropagationPolicyPermanentID, naming.LabelClusterPropagationPolicyPermanentID} {
		drop(edit.labels, labels, key)
	}
	for _, key := range []string{naming.AnnotationPropagationPolicyName, naming.AnnotationPropagationPolicyNamespace, naming.AnnotationClusterPropagationPolicyName} {
		drop(edit.annotations, annotations, key)
	}
	return edit
}

// releaseEdit is what removes a MultiClusterService's claim from the Service: its labels and
// annotations, if the Service is claimed by a MultiClusterService; nothing otherwise.
func releaseEdit(svc *corev1.Service) metadataEdit {
	labels, annotations := svc.GetLabels(), svc.GetAnnotations()
	edit := metadataEdit{labels: map[string]any{}, annotations: map[string]any{}}
	if labels[naming.LabelClaimedBy] != naming.ClaimedByMultiClusterService {
		return edit
	}
	drop(edit.labels, labels, naming.LabelClaimedBy)
	drop(edit.labels, labels, networkingv1alpha1.LabelMCSPermanentID)
	drop(edit.annotations, annotations, networkingv1alpha1.AnnotationMCSName)
	drop(edit.annotations, annotations, networkingv1alpha1.AnnotationMCSNamespace)
	return edit
}
