package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// apiServiceGVR is the aggregation layer's APIService, reached with the dynamic client (the
// kube-aggregator clientset is not a dependency of the project).
var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// clusterAPIService registers cluster.karmada.io/v1alpha1 with the aggregator.
const clusterAPIService = "v1alpha1.cluster.karmada.io"

// installKarmadaCRDs installs Karmada's CRD set from the CRD tarball the environment serves
// and waits until all are Established.
func (e *Env) installKarmadaCRDs(ctx context.Context) error {
	if e.crds.tarball == nil {
		return fmt.Errorf("beside Karmada the control plane needs Karmada's CRD tarball: %s", e.crds.source)
	}
	crds, err := karmadaCRDs(e.crds.tarball, e.karmada.webhookURL(), e.karmada.caPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", e.crds.source, err)
	}
	_, err = createCRDs(ctx, e.ControlPlane, crds)
	return err
}

// karmadaCRDs are the CRDs of a Karmada CRD tarball with its patches applied as
// karmada-operator applies them. The patches turn on the conversion webhook of
// resourcebindings and clusterresourcebindings at karmada-webhook's Service; here every
// conversion webhook is called at webhookURL (karmada-webhook on loopback), trusting caPEM.
func karmadaCRDs(tarball []byte, webhookURL string, caPEM []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	t, err := provisioning.ReadCRDTarball(bytes.NewReader(tarball))
	if err != nil {
		return nil, err
	}
	objs, err := t.CRDs(binKarmadaWebhook, karmadaSystemNamespace, caPEM)
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, obj := range objs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", obj.GetName(), err)
		}
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil {
			c.Webhook.ClientConfig.Service = nil
			c.Webhook.ClientConfig.URL = ptr.To(webhookURL + "/convert")
			c.Webhook.ClientConfig.CABundle = caPEM
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// registerClusterAPI registers the aggregated API server as upstream does (an APIService
// naming a Service in karmada-system, trusting the components' CA) and waits until the
// APIService is Available. The Service is an ExternalName one for localhost: the aggregator
// dials localhost:<APIService port> and verifies the Service's name,
// karmada-aggregated-apiserver.karmada-system.svc, in the serving certificate.
func (e *Env) registerClusterAPI(ctx context.Context, aggregated *process) error {
	cp := e.ControlPlane
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: binKarmadaAggregated, Namespace: karmadaSystemNamespace, Labels: map[string]string{"app": binKarmadaAggregated}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := cp.Client().CoreV1().Services(karmadaSystemNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s: %w", karmadaSystemNamespace, binKarmadaAggregated, err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiServiceGVR.GroupVersion().String(),
		"kind":       "APIService",
		"metadata":   map[string]any{"name": clusterAPIService, "labels": map[string]any{"app": binKarmadaAggregated, "apiserver": "true"}},
		"spec": map[string]any{
			"group": ClusterGVR.Group, "version": ClusterGVR.Version,
			"groupPriorityMinimum": int64(2000), "versionPriority": int64(10),
			"caBundle": e.karmada.caPEM,
			"service": map[string]any{"name": binKarmadaAggregated, "namespace": karmadaSystemNamespace,
				"port": int64(e.karmada.aggregatedPort)},
		},
	}}
	if _, err := cp.Dynamic().Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create APIService %s: %w", clusterAPIService, err)
	}
	return waitFor(ctx, karmadaReadyTimeout, "APIService "+clusterAPIService+" Available", func(ctx context.Context) error {
		obj, err := cp.Dynamic().Resource(apiServiceGVR).Get(ctx, clusterAPIService, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return conditionTrue(obj, "Available")
	}, aggregated)
}

// conditionTrue answers nil when obj's condition of type condType is True, else says what it is.
func conditionTrue(obj *unstructured.Unstructured, condType string) error {
	conditions, err := kube.Conditions(obj)
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(conditions, condType)
	if c == nil {
		return fmt.Errorf("%s %s has no %s condition yet", obj.GetKind(), obj.GetName(), condType)
	}
	if c.Status != metav1.ConditionTrue {
		return fmt.Errorf("%s %s is not %s: %s %s: %s", obj.GetKind(), obj.GetName(), condType, c.Status, c.Reason, c.Message)
	}
	return nil
}

// registerWebhooks creates the mutating and validating webhook configurations upstream's
// karmada-operator registers (provisioning.WebhookConfigurations), each hook's URL moved from
// the instance's Service to karmada-webhook's loopback address.
func (e *Env) registerWebhooks(ctx context.Context) error {
	// The Karmada object only names the Service the URLs point at, replaced below.
	k := &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: "karmada", Namespace: karmadaSystemNamespace}}
	mutating, validating := provisioning.WebhookConfigurations(k, e.karmada.caPEM)
	var errs []error
	for i := range mutating.Webhooks {
		errs = append(errs, e.karmada.toLoopback(&mutating.Webhooks[i].ClientConfig))
	}
	for i := range validating.Webhooks {
		errs = append(errs, e.karmada.toLoopback(&validating.Webhooks[i].ClientConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	admission := e.ControlPlane.Client().AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create MutatingWebhookConfiguration %s: %w", mutating.Name, err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", validating.Name, err)
	}
	return nil
}

// toLoopback points a webhook's client configuration at karmada-webhook's loopback address,
// keeping the path.
func (k *karmadaComponents) toLoopback(cc *admissionregistrationv1.WebhookClientConfig) error {
	if cc.URL == nil {
		return errors.New("a karmada-webhook hook without a URL")
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return fmt.Errorf("karmada-webhook hook URL %q: %w", *cc.URL, err)
	}
	cc.URL = ptr.To(k.webhookURL() + u.Path)
	return nil
}

// joinCluster registers member m as `karmadactl join` does in Push mode, given the Secret with
// its credentials (registerMembers): a Secret <member>-impersonator for Karmada's unified
// auth and cluster proxy (here the member's admin token, which may impersonate), and the
// Cluster, created through the aggregated API, both Secrets bound to it. Its status is
// Karmada's to set.
func (e *Env) joinCluster(ctx context.Context, m *Cluster, secret *corev1.Secret) error {
	cp := e.ControlPlane
	impersonator := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-impersonator", Namespace: ClusterSecretNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"token": []byte(m.token)},
	}
	if _, err := cp.Client().CoreV1().Secrets(ClusterSecretNamespace).Create(ctx, impersonator, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s for member %s: %w", ClusterSecretNamespace, impersonator.Name, m.Name, err)
	}
	spec, err := clusterSpec(ctx, m, true)
	if err != nil {
		return err
	}
	spec["impersonatorSecretRef"] = map[string]any{"namespace": ClusterSecretNamespace, "name": impersonator.Name}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": m.Name},
		"spec":       spec,
	}}
	created, err := cp.Dynamic().Resource(ClusterGVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: "karmadaflow-env"})
	if apierrors.IsAlreadyExists(err) {
		created, err = cp.Dynamic().Resource(ClusterGVR).Get(ctx, m.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("create Cluster %s in cluster %s: %w", m.Name, cp.Name, err)
	}
	return BindCredentials(ctx, cp.Client(), created, secret, impersonator)
}

// waitClustersReady waits until Karmada's cluster status controller has marked every member's
// Cluster Ready.
func (e *Env) waitClustersReady(ctx context.Context) error {
	for _, m := range e.Members {
		if err := waitFor(ctx, karmadaReadyTimeout, "Cluster "+m.Name+" Ready (by "+binKarmadaCM+")", func(ctx context.Context) error {
			obj, err := e.ControlPlane.Dynamic().Resource(ClusterGVR).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return conditionTrue(obj, "Ready")
		}, e.karmada.procs...); err != nil {
			return err
		}
	}
	return nil
}
