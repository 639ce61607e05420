package provisioning

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	tenantkubeconfig "github.com/karmadaflow/karmadaflow/internal/kubeconfig"
)

// target is the host cluster an instance is installed into: the cluster karmadaflow runs
// against, or the remote cluster spec.hostCluster.secretRef's kubeconfig reaches.
type target struct {
	a      *Activities
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	remote bool
}

// local is the cluster karmadaflow runs against, where the Karmada objects live.
func (a *Activities) local() *target { return &target{a: a, kube: a.Host, dyn: a.HostDynamic} }

// targetOf returns the host cluster of k. The kubeconfig Secret of a remote host cluster
// (key "kubeconfig") is read from the local cluster, in k's namespace.
func (a *Activities) targetOf(ctx context.Context, k *operatorv1alpha1.Karmada) (*target, error) {
	h := k.Spec.HostCluster
	if h == nil || h.SecretRef == nil {
		return a.local(), nil
	}
	ref, err := secretRef(k, *h.SecretRef)
	if err != nil {
		return nil, err
	}
	secret, err := a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading host cluster Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	kube, dyn, err := hostClusterClients(secret.Data[KeyKubeconfig])
	if err != nil {
		// Nothing changes until the Secret does: a ValidationError, which ValidateKarmada
		// reports on the Karmada before any step runs.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("spec.hostCluster.secretRef: Secret %s/%s, key %s: %v",
			ref.Namespace, ref.Name, KeyKubeconfig, err), ErrValidation, nil)
	}
	return &target{a: a, kube: kube, dyn: dyn, remote: true}, nil
}

// hostClusterClients are the clients of a remote host cluster's kubeconfig. Whoever may write
// Secrets in the Karmada's namespace writes it, so it is held to inline credentials: client-go's
// own loader would run its exec plugin as the worker, or send a file of the worker's (its
// ServiceAccount token) to a server the kubeconfig names. Every error is the kubeconfig's
// (its server URL, its TLS data).
func hostClusterClients(data []byte) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := tenantkubeconfig.InlineRESTConfig(data)
	if err != nil {
		return nil, nil, err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, client)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, client)
	if err != nil {
		return nil, nil, err
	}
	return kube, dyn, nil
}

// checkHostClusterSecret reports a remote host cluster's kubeconfig that the worker refuses;
// nothing when the Secret is missing or cannot be read (the first install step reports that,
// with its retries) or lies in another namespace (Validate reports that).
func (a *Activities) checkHostClusterSecret(ctx context.Context, k *operatorv1alpha1.Karmada) []string {
	h := k.Spec.HostCluster
	if h == nil || h.SecretRef == nil || (h.SecretRef.Namespace != "" && h.SecretRef.Namespace != k.Namespace) {
		return nil
	}
	_, err := a.targetOf(ctx, k)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrValidation {
		return []string{appErr.Message()}
	}
	return nil
}

// instance reads the Karmada and its host cluster.
func (a *Activities) instance(ctx context.Context, ref Ref) (*operatorv1alpha1.Karmada, *target, error) {
	k, err := a.mustGet(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	t, err := a.targetOf(ctx, k)
	return k, t, err
}
