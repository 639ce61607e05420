// Package kube holds the small Kubernetes helpers every I/O package shares: the resources of
// the Karmada APIs karmadaflow speaks, conversions between typed and unstructured objects,
// server-side apply with karmadaflow's field manager (and the conditional create of an object
// believed absent), and error classification.
package kube

import (
	"context"
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Resources of the Karmada APIs.
var (
	MultiClusterServices = schema.GroupVersionResource{Group: "networking.karmada.io", Version: "v1alpha1", Resource: "multiclusterservices"}
	Works                = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha1", Resource: "works"}
	Clusters             = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}
	ResourceRegistries   = schema.GroupVersionResource{Group: "search.karmada.io", Version: "v1alpha1", Resource: "resourceregistries"}
	Karmadas             = schema.GroupVersionResource{Group: "operator.karmada.io", Version: "v1alpha1", Resource: "karmadas"}
	EndpointSlices       = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	Services             = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	Namespaces           = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	Leases               = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// FromUnstructured converts u into the typed object out points to.
func FromUnstructured(u *unstructured.Unstructured, out any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return fmt.Errorf("decoding %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// ToUnstructured converts a typed object (with apiVersion and kind set) to unstructured.
func ToUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Get reads one object of resource gvr into out; found is false when it does not exist.
func Get(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string, out any) (found bool, err error) {
	u, err := client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting %s %s/%s: %w", gvr.Resource, namespace, name, err)
	}
	return true, FromUnstructured(u, out)
}

// Apply writes obj with server-side apply under karmadaflow's field manager, taking over
// conflicting fields.
func Apply(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured, subresources ...string) (*unstructured.Unstructured, error) {
	force := true
	out, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: naming.FieldManager, Force: force}, subresources...)
	if err != nil {
		return nil, fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// Create creates obj under karmadaflow's field manager, for a caller that found it absent.
// Unlike an apply it fails (AlreadyExists) when someone created the object meanwhile, so that
// a stale read (a watch cache's NotFound) never adopts another's object. A create records the
// fields it set as updated, not applied; ApplyOver takes them over as applied at the object's
// next write, so that an object written once costs one write.
func Create(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: naming.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("creating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// ApplyOver applies obj over current, the object as last read, conditional on current's
// resourceVersion. The fields karmadaflow set by a create or an update are first recorded as
// applied, so that the apply owns them and removes those it no longer sets. A Conflict means
// that current was stale.
func ApplyOver(ctx context.Context, client dynamic.ResourceInterface, obj, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(current, sets.New(naming.FieldManager), naming.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("recording the fields of %s %s/%s as applied: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	obj = obj.DeepCopy()
	obj.SetResourceVersion(current.GetResourceVersion())
	if patch != nil {
		// The patch replaces the resourceVersion read, so a change since makes it a Conflict.
		upgraded, err := client.Patch(ctx, current.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return nil, fmt.Errorf("recording the fields of %s %s/%s as applied: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		obj.SetResourceVersion(upgraded.GetResourceVersion())
	}
	return Apply(ctx, client, obj)
}

// IgnoreNotFound returns nil for a NotFound error and err otherwise.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// IsPermanent tells whether retrying err cannot help until the input changes.
func IsPermanent(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsRequestEntityTooLargeError(err)
}

// Conditions decodes the status.conditions of obj.
func Conditions(obj *unstructured.Unstructured) ([]metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return nil, fmt.Errorf("%s %s: status.conditions: %w", obj.GetKind(), obj.GetName(), err)
	}
	out := make([]metav1.Condition, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: a status condition is not an object", obj.GetKind(), obj.GetName())
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			return nil, fmt.Errorf("%s %s: status.conditions: %w", obj.GetKind(), obj.GetName(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// SetConditions encodes conds into status.conditions of obj.
func SetConditions(obj *unstructured.Unstructured, conds []metav1.Condition) error {
	encoded := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		encoded = append(encoded, m)
	}
	return unstructured.SetNestedSlice(obj.Object, encoded, "status", "conditions")
}

// Reason classifies err for metrics: the Kubernetes status reason, "Timeout" for a deadline
// that ran out, "Unreachable" for a connection that failed, or "Other".
func Reason(err error) string {
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		return string(reason)
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "Timeout"
	case netErr != nil:
		return "Unreachable"
	}
	return "Other"
}
