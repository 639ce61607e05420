package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Reading the Karmada object: get and mustGet, and ValidateKarmada's summary of it with the
// problems of its spec and of the Secrets it names.

func (a *Activities) get(ctx context.Context, ref Ref) (*operatorv1alpha1.Karmada, bool, error) {
	var k operatorv1alpha1.Karmada
	found, err := kube.Get(ctx, a.HostDynamic, kube.Karmadas, ref.Namespace, ref.Name, &k)
	if err != nil {
		return nil, false, err
	}
	return &k, found, nil
}

// mustGet reads the Karmada; its absence is a non-retryable error (the workflow hears of the
// deletion through a signal).
func (a *Activities) mustGet(ctx context.Context, ref Ref) (*operatorv1alpha1.Karmada, error) {
	k, found, err := a.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, temporal.NewNonRetryableApplicationError("Karmada "+ref.String()+" not found", ErrNotFound, nil)
	}
	return k, nil
}

// ValidateKarmada reads the Karmada and checks its namespace against the worker's provisioning
// namespaces, its spec, spec.crdTarball against this worker's allowlists, and what its pods ask
// of their nodes against its HostAccess. An invalid spec is a non-retryable ValidationError
// whose details are the Summary.
func (a *Activities) ValidateKarmada(ctx context.Context, ref Ref) (Summary, error) {
	k, found, err := a.get(ctx, ref)
	if err != nil || !found {
		return Summary{}, err
	}
	sum := Summary{
		Exists:       true,
		Deleting:     k.DeletionTimestamp != nil,
		HasFinalizer: slices.Contains(k.Finalizers, operatorv1alpha1.Finalizer),
		KeepOnDelete: k.Labels[operatorv1alpha1.LabelDisableCascadingDeletion] == "true",
		Suspended:    ptr.Deref(k.Spec.Suspend, false),
		Generation:   k.Generation,
		ServiceType:  string(ServiceType(k)),
		LocalEtcd:    !externalEtcd(k),
		Hashes:       StepHashes(k),
	}
	for _, c := range InstalledComponents(k) {
		sum.Components = append(sum.Components, c.Name)
	}
	if sum.Deleting {
		return sum, nil
	}
	if !a.provisions(k.Namespace) {
		// Nothing more is read: the worker may read nothing else there.
		sum.Invalid = []string{outsideNamespaces(k.Namespace)}
		return sum, temporal.NewNonRetryableApplicationError(sum.Invalid[0], ErrValidation, nil, sum)
	}
	sum.Invalid = append(Validate(k), a.CRDSource.CheckSpec(k)...)
	sum.Invalid = append(sum.Invalid, a.HostAccess.CheckSpec(k)...)
	siblings, err := a.listKarmadas(ctx, k.Namespace)
	if err != nil {
		return Summary{}, err
	}
	sum.Invalid = append(sum.Invalid, ValidateName(k, siblings)...)
	sum.Invalid = append(sum.Invalid, a.checkHostClusterSecret(ctx, k)...)
	if sum.HasFinalizer {
		if err := a.recordHostCluster(ctx, k); err != nil {
			return Summary{}, err
		}
	}
	problems, err := a.checkInstalled(ctx, k)
	if err != nil {
		return Summary{}, err
	}
	sum.Invalid = append(sum.Invalid, problems...)
	if externalEtcd(k) && k.Spec.Components.Etcd.External.SecretRef.Name != "" {
		problems, err := a.checkExternalEtcdSecret(ctx, k)
		if err != nil {
			return Summary{}, err
		}
		sum.Invalid = append(sum.Invalid, problems...)
	}
	if len(sum.Invalid) > 0 {
		return sum, temporal.NewNonRetryableApplicationError(strings.Join(sum.Invalid, "; "), ErrValidation, nil, sum)
	}
	return sum, nil
}

// listKarmadas reads the Karmadas of namespace (no Secret: names are all ValidateName needs).
func (a *Activities) listKarmadas(ctx context.Context, namespace string) ([]operatorv1alpha1.Karmada, error) {
	list, err := a.HostDynamic.Resource(kube.Karmadas).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Karmadas of namespace %s: %w", namespace, err)
	}
	out := make([]operatorv1alpha1.Karmada, len(list.Items))
	for i := range list.Items {
		if err := kube.FromUnstructured(&list.Items[i], &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkExternalEtcdSecret reports what the external etcd's Secret lacks (nothing when the
// reference itself is invalid: Validate reports that).
func (a *Activities) checkExternalEtcdSecret(ctx context.Context, k *operatorv1alpha1.Karmada) ([]string, error) {
	ref, err := secretRef(k, k.Spec.Components.Etcd.External.SecretRef)
	if err != nil {
		return nil, nil
	}
	secret, err := a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading external etcd Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return validateExternalEtcdSecret(secret, err == nil, ref), nil
}

// secretRef resolves a Secret reference of k's spec to k's own namespace. A reference into
// another namespace is refused (Validate reports it first): the worker may read Secrets that
// the creator of k may not, and would copy their keys into Secrets of k's namespace.
func secretRef(k *operatorv1alpha1.Karmada, ref operatorv1alpha1.LocalSecretReference) (operatorv1alpha1.LocalSecretReference, error) {
	if ref.Namespace != "" && ref.Namespace != k.Namespace {
		return ref, temporal.NewNonRetryableApplicationError(fmt.Sprintf("Secret %s/%s is outside the namespace of Karmada %s/%s",
			ref.Namespace, ref.Name, k.Namespace, k.Name), ErrValidation, nil)
	}
	ref.Namespace = k.Namespace
	return ref, nil
}
