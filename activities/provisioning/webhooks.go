package provisioning

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// Names of the webhook configurations inside the control plane, as karmada-operator names them.
const (
	MutatingWebhookConfiguration   = "mutating-config"
	ValidatingWebhookConfiguration = "validating-config"
)

// admissionHook is one webhook of karmada-webhook's configurations.
type admissionHook struct {
	name     string // the webhook's name
	path     string // on karmada-webhook
	group    string
	resource string
	scope    admissionregistrationv1.ScopeType
	// createOnly hooks see CREATE only; the others CREATE and UPDATE.
	createOnly bool
	// timeout in seconds; 0 means 3.
	timeout int32
	// dryRunAware hooks declare sideEffects NoneOnDryRun; the others None.
	dryRunAware bool
	// deletion hooks see the DELETE of any object carrying deletionProtectionLabel instead.
	deletion bool
}

const (
	namespaced = admissionregistrationv1.NamespacedScope
	clustered  = admissionregistrationv1.ClusterScope
)

// The webhooks karmada-operator registers (operator/pkg/karmadaresource/webhookconfiguration/
// manifests.go; the Helm chart's _karmada_webhook_configuration.tpl has the same ones except
// the two FederatedHPA validations), every path one karmada-webhook serves.
var (
	mutatingHooks = []admissionHook{
		{name: "propagationpolicy.karmada.io", path: "/mutate-propagationpolicy", group: "policy.karmada.io", resource: "propagationpolicies", scope: namespaced},
		{name: "clusterpropagationpolicy.karmada.io", path: "/mutate-clusterpropagationpolicy", group: "policy.karmada.io", resource: "clusterpropagationpolicies", scope: clustered},
		{name: "overridepolicy.karmada.io", path: "/mutate-overridepolicy", group: "policy.karmada.io", resource: "overridepolicies", scope: namespaced},
		{name: "resourcebinding.karmada.io", path: "/mutate-resourcebinding", group: "work.karmada.io", resource: "resourcebindings", scope: namespaced, createOnly: true},
		{name: "clusterresourcebinding.karmada.io", path: "/mutate-clusterresourcebinding", group: "work.karmada.io", resource: "clusterresourcebindings", scope: clustered, createOnly: true},
		{name: "work.karmada.io", path: "/mutate-work", group: "work.karmada.io", resource: "works", scope: namespaced},
		{name: "autoscaling.karmada.io", path: "/mutate-federatedhpa", group: "autoscaling.karmada.io", resource: "federatedhpas", scope: namespaced},
		{name: "multiclusterservice.karmada.io", path: "/mutate-multiclusterservice", group: "networking.karmada.io", resource: "multiclusterservices", scope: namespaced},
	}
	validatingHooks = []admissionHook{
		{name: "propagationpolicy.karmada.io", path: "/validate-propagationpolicy", group: "policy.karmada.io", resource: "propagationpolicies", scope: namespaced},
		{name: "clusterpropagationpolicy.karmada.io", path: "/validate-clusterpropagationpolicy", group: "policy.karmada.io", resource: "clusterpropagationpolicies", scope: clustered},
		{name: "overridepolicy.karmada.io", path: "/validate-overridepolicy", group: "policy.karmada.io", resource: "overridepolicies", scope: namespaced},
		{name: "clusteroverridepolicy.karmada.io", path: "/validate-clusteroverridepolicy", group: "policy.karmada.io", resource: "clusteroverridepolicies", scope: clustered},
		{name: "config.karmada.io", path: "/validate-resourceinterpreterwebhookconfiguration", group: "config.karmada.io", resource: "resourceinterpreterwebhookconfigurations", scope: clustered},
		{name: "resourceinterpretercustomization.karmada.io", path: "/validate-resourceinterpretercustomization", group: "config.karmada.io", resource: "resourceinterpretercustomizations", scope: clustered, timeout: 10},
		{name: "federatedresourcequota.karmada.io", path: "/validate-federatedresourcequota", group: "policy.karmada.io", resource: "federatedresourcequotas", scope: namespaced},
		{name: "multiclusteringress.karmada.io", path: "/validate-multiclusteringress", group: "networking.karmada.io", resource: "multiclusteringresses", scope: namespaced},
		{name: "federatedhpa.karmada.io", path: "/validate-federatedhpa", group: "autoscaling.karmada.io", resource: "federatedhpas", scope: namespaced},
		{name: "cronfederatedhpa.karmada.io", path: "/validate-cronfederatedhpa", group: "autoscaling.karmada.io", resource: "cronfederatedhpas", scope: namespaced},
		{name: "multiclusterservice.karmada.io", path: "/validate-multiclusterservice", group: "networking.karmada.io", resource: "multiclusterservices", scope: namespaced},
		{name: "resourcedeletionprotection.karmada.io", path: "/validate-resourcedeletionprotection", deletion: true},
		{name: "resourcebinding.karmada.io", path: "/validate-resourcebinding", group: "work.karmada.io", resource: "resourcebindings", scope: namespaced, dryRunAware: true},
	}
)

// deletionProtectionLabel marks the objects whose deletion karmada-webhook refuses.
const deletionProtectionLabel = "resourcetemplate.karmada.io/deletion-protected"

// WebhookConfigurations are the mutating and validating webhook configurations of
// karmada-webhook, as karmada-operator registers them: every hook calls the instance's
// karmada-webhook Service in the host cluster (where the API server runs) and trusts the
// generated CA.
func WebhookConfigurations(k *operatorv1alpha1.Karmada, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	base := webhookURL(k)
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: caBundle}
	}
	labels := map[string]string{"app": Webhook.Name}

	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingWebhookConfiguration, Labels: labels},
	}
	for _, h := range mutatingHooks {
		m.Webhooks = append(m.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: h.name, Rules: h.rules(), ClientConfig: client(h.path),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: h.sideEffects(),
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: h.timeoutSeconds(),
		})
	}

	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingWebhookConfiguration, Labels: labels},
	}
	for _, h := range validatingHooks {
		v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: h.name, Rules: h.rules(), ClientConfig: client(h.path), ObjectSelector: h.objectSelector(),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: h.sideEffects(),
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: h.timeoutSeconds(),
		})
	}
	return m, v
}

// webhookURL is the base URL of the instance's karmada-webhook: its Service in the host
// cluster, resolved by the API server's pod there. karmada-operator points the admission and
// conversion webhooks at the same URL.
func webhookURL(k *operatorv1alpha1.Karmada) string {
	return "https://" + NamesFor(k.Name).Of(SuffixWebhook) + "." + k.Namespace + ".svc:443"
}

func (h admissionHook) rules() []admissionregistrationv1.RuleWithOperations {
	if h.deletion {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}}
	}
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	if h.createOnly {
		ops = ops[:1]
	}
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{h.group}, APIVersions: []string{"*"}, Resources: []string{h.resource}, Scope: ptr.To(h.scope)},
	}}
}

func (h admissionHook) objectSelector() *metav1.LabelSelector {
	if !h.deletion {
		return nil
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: deletionProtectionLabel, Operator: metav1.LabelSelectorOpExists},
	}}
}

func (h admissionHook) sideEffects() *admissionregistrationv1.SideEffectClass {
	if h.dryRunAware {
		return ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	}
	return ptr.To(admissionregistrationv1.SideEffectClassNone)
}

func (h admissionHook) timeoutSeconds() *int32 {
	if h.timeout != 0 {
		return ptr.To(h.timeout)
	}
	return ptr.To[int32](3)
}
