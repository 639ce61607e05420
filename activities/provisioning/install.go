package provisioning

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// crdEstablishTimeout bounds the wait for the installed CRDs.
const crdEstablishTimeout = time.Minute

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InitControlPlane installs, inside the new control plane (reached with the admin
// kubeconfig), in order: the karmada-system namespace, the Karmada CRDs of the CRD tarball
// with its conversion patches (waiting until they are Established), the webhook
// configurations, the APIService registrations and the RBAC.
func (a *Activities) InitControlPlane(ctx context.Context, ref Ref) error {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return err
	}
	client, err := t.controlPlaneClient(ctx, k)
	if err != nil {
		return err
	}
	certs, err := t.kube.CoreV1().Secrets(k.Namespace).Get(ctx, NamesFor(k.Name).Of(SuffixCert), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, NamesFor(k.Name).Of(SuffixCert), err)
	}
	caBundle := certs.Data[KeyCACert]
	if len(caBundle) == 0 {
		return fmt.Errorf("Secret %s/%s has no %s", k.Namespace, NamesFor(k.Name).Of(SuffixCert), KeyCACert)
	}

	heartbeat(ctx, "namespace")
	if _, err := a.apply(ctx, client, ControlPlaneNamespace()); err != nil {
		return err
	}
	heartbeat(ctx, "CRDs")
	tarball, err := a.crdTarball(ctx, k)
	if err != nil {
		return err
	}
	crds, err := tarball.CRDs(NamesFor(k.Name).Of(SuffixWebhook), k.Namespace, caBundle)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if _, err := a.apply(ctx, client, crd); err != nil {
			return err
		}
	}
	if err := a.waitEstablished(ctx, client, crds); err != nil {
		return err
	}
	heartbeat(ctx, "webhook configurations")
	mutating, validating := WebhookConfigurations(k, caBundle)
	for _, obj := range []any{mutating, validating} {
		if _, err := a.apply(ctx, client, obj); err != nil {
			return err
		}
	}
	heartbeat(ctx, "APIServices")
	services, apiServices := APIServices(k, caBundle)
	for _, svc := range services {
		if _, err := a.apply(ctx, client, svc); err != nil {
			return err
		}
	}
	for _, svc := range apiServices {
		if _, err := a.apply(ctx, client, svc); err != nil {
			return err
		}
	}
	heartbeat(ctx, "RBAC")
	roles, binding := RBAC()
	for _, role := range roles {
		if _, err := a.apply(ctx, client, role); err != nil {
			return err
		}
	}
	_, err = a.apply(ctx, client, binding)
	return err
}

// crdTarballHeartbeat is how often crdTarball heartbeats, well within the heartbeat timeout
// of InitControlPlane.
const crdTarballHeartbeat = 5 * time.Second

// crdTarball gets k's CRD tarball, heartbeating meanwhile: a download (bounded by
// crdDownloadTimeout) may take longer than the heartbeat timeout.
func (a *Activities) crdTarball(ctx context.Context, k *operatorv1alpha1.Karmada) (*CRDTarball, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		ticker := time.NewTicker(crdTarballHeartbeat)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				heartbeat(ctx, "CRDs: downloading the tarball")
			}
		}
	}()
	return a.CRDSource.Tarball(ctx, a.Host, k)
}

func (a *Activities) waitEstablished(ctx context.Context, client dynamic.Interface, crds []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, crdEstablishTimeout)
	defer cancel()
	for _, crd := range crds {
		for {
			got, err := client.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			if err := a.pause(ctx, "waiting for CRD "+crd.GetName()+" to be Established"); err != nil {
				return fmt.Errorf("CRD %s not Established: %w", crd.GetName(), err)
			}
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
