package provisioning

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// The components after the API servers, rolled one at a time: each applied, then waited for
// until its rollout completes, before the next; then those the spec no longer names removed.

// InstallComponent applies the Deployment, Service and PDB of one component. Its pods carry
// the hash of the certificates they mount and of the client certificate of their kubeconfig,
// so that renewing either rolls them.
func (a *Activities) InstallComponent(ctx context.Context, in ComponentInput) error {
	k, t, err := a.instanceForPods(ctx, in.Ref)
	if err != nil {
		return err
	}
	c, err := installedComponent(k, in.Component)
	if err != nil {
		return err
	}
	return t.installComponent(ctx, k, c, in.CertHash)
}

// WaitComponentReady waits, heartbeating, until the rollout of one component is complete,
// and fails at once when it cannot complete (see rolledOut); for a component that serves an
// API through the API server's aggregator (karmada-search, karmada-metrics-adapter), until
// its APIServices are Available too, so that Ready means its API answers.
func (a *Activities) WaitComponentReady(ctx context.Context, in ComponentInput) error {
	err := a.waitReady(ctx, in.Ref, func(k *operatorv1alpha1.Karmada) []Component {
		c, err := installedComponent(k, in.Component)
		if err != nil {
			return nil // no longer installed: nothing to wait for
		}
		return []Component{c}
	})
	if err != nil {
		return err
	}
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return err
	}
	c, err := installedComponent(k, in.Component)
	if err != nil || len(apiServicesOf(c)) == 0 {
		return nil
	}
	controlPlane, err := t.controlPlaneClient(ctx, k)
	if err != nil {
		return err
	}
	for _, name := range apiServicesOf(c) {
		for {
			available, why, err := apiServiceAvailable(ctx, controlPlane, name)
			if err != nil {
				return err
			}
			if available {
				break
			}
			if err := a.pause(ctx, "APIService "+name+" of "+c.Name+" not Available: "+why); err != nil {
				return err
			}
		}
	}
	return nil
}

// apiServiceAvailable reads the Available condition of APIService name.
func apiServiceAvailable(ctx context.Context, controlPlane dynamic.Interface, name string) (bool, string, error) {
	obj, err := controlPlane.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "not registered yet", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("reading APIService %s: %w", name, err)
	}
	conditions, err := kube.Conditions(obj)
	if err != nil {
		return false, "", err
	}
	for _, c := range conditions {
		if c.Type == "Available" {
			return c.Status == metav1.ConditionTrue, c.Reason + ": " + c.Message, nil
		}
	}
	return false, "no Available condition yet", nil
}

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// RemoveOldComponents removes the workloads of the optional components the spec no longer
// names.
func (a *Activities) RemoveOldComponents(ctx context.Context, ref Ref) error {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return err
	}
	for _, c := range Components {
		if !Installed(k, c) {
			if err := t.removeComponent(ctx, k, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// installedComponent is the component named name, which k must install.
func installedComponent(k *operatorv1alpha1.Karmada, name string) (Component, error) {
	for _, c := range InstalledComponents(k) {
		if c.Name == name {
			return c, nil
		}
	}
	return Component{}, fmt.Errorf("component %s is not part of Karmada %s/%s", name, k.Namespace, k.Name)
}

// installComponent applies c's Service, Deployment and PDB.
func (t *target) installComponent(ctx context.Context, k *operatorv1alpha1.Karmada, c Component, certHash string) error {
	kubeconfigHash, err := t.kubeconfigHash(ctx, k, c)
	if err != nil {
		return err
	}
	d, svc := ComponentObjects(k, c, hashOf(certHash, kubeconfigHash))
	if svc != nil {
		if _, err := t.a.apply(ctx, t.dyn, svc); err != nil {
			return err
		}
	}
	if _, err := t.a.apply(ctx, t.dyn, d); err != nil {
		return err
	}
	return t.ensurePDB(ctx, k, c)
}

// kubeconfigHash is a hash of the server and client certificate (never the key) of c's
// kubeconfig Secret, empty when it has none.
func (t *target) kubeconfigHash(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) (string, error) {
	name := NamesFor(k.Name).ComponentConfig(c.Name)
	secret, err := t.kube.CoreV1().Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, name, err)
	}
	cfg, err := clientcmd.Load(secret.Data[KeyKubeconfig])
	if err != nil {
		return "", fmt.Errorf("kubeconfig of Secret %s/%s: %w", k.Namespace, name, err)
	}
	cert, err := clientCertificate(cfg)
	if err != nil {
		return "", fmt.Errorf("kubeconfig of Secret %s/%s: %w", k.Namespace, name, err)
	}
	return hashOf(cert.Raw), nil
}
