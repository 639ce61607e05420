package provisioning

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
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
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[KeyKubeconfig])
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of host cluster Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &target{a: a, kube: kube, dyn: dyn, remote: true}, nil
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
