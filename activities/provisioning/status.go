package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// WriteKarmadaStatus writes the Ready condition, observedGeneration, apiServerService (read
// from the Service), and, as in, secretRef with apiServerEndpoint (the admin kubeconfig's
// server) and the versions; with Warning it also records an Event on the Karmada.
func (a *Activities) WriteKarmadaStatus(ctx context.Context, in StatusInput) error {
	client := a.HostDynamic.Resource(kube.Karmadas).Namespace(in.Ref.Namespace)
	obj, err := client.Get(ctx, in.Ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Karmada %s: %w", in.Ref, err)
	}
	var k operatorv1alpha1.Karmada
	if err := kube.FromUnstructured(obj, &k); err != nil {
		return err
	}
	status := k.Status.DeepCopy()
	status.ObservedGeneration = in.Generation
	cond := metav1.Condition{Type: operatorv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: in.Reason,
		Message: in.Message, ObservedGeneration: in.Generation}
	if in.Ready {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	// A host cluster that cannot be reached leaves apiServerService as it was, so that the
	// failure itself can still be reported; so does a namespace the worker does not provision,
	// where it may not read the Service.
	if t, err := a.statusTarget(ctx, &k); err == nil {
		svc, err := t.apiServerService(ctx, &k)
		if err != nil {
			return err
		}
		status.APIServerService = svc
		if in.AdminConfig {
			// The same function as the admin kubeconfig's server, so that both always agree.
			endpoint, err := t.endpoint(ctx, &k)
			if err != nil {
				return err
			}
			status.APIServerEndpoint = endpoint
		}
	}
	if in.AdminConfig {
		status.SecretRef = &operatorv1alpha1.LocalSecretReference{Namespace: k.Namespace, Name: NamesFor(k.Name).Of(SuffixAdminConfig)}
	}
	if in.Completed {
		status.KarmadaVersion, status.KubernetesVersion = Versions(&k)
	}
	if in.Certificates != nil {
		status.Certificates = certificatesStatus(*in.Certificates)
	}
	encoded, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return fmt.Errorf("encoding status of Karmada %s: %w", in.Ref, err)
	}
	obj.Object["status"] = encoded
	if _, err := client.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status of Karmada %s: %w", in.Ref, err)
	}
	if in.Warning {
		return a.recordWarning(ctx, &k, in)
	}
	return nil
}

// statusTarget is the host cluster whose Service the status describes; an error for a namespace
// the worker does not provision, where it may not read (a remote host's Secret included).
func (a *Activities) statusTarget(ctx context.Context, k *operatorv1alpha1.Karmada) (*target, error) {
	if !a.provisions(k.Namespace) {
		return nil, fmt.Errorf("namespace %s is not provisioned", k.Namespace)
	}
	return a.targetOf(ctx, k)
}

// apiServerService describes the API server's Service: all five fields of seed 000.
func (t *target) apiServerService(ctx context.Context, k *operatorv1alpha1.Karmada) (*operatorv1alpha1.APIServerServiceStatus, error) {
	name := NamesFor(k.Name).Of(SuffixAPIServer)
	svc, err := t.kube.CoreV1().Services(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Service %s/%s: %w", k.Namespace, name, err)
	}
	out := &operatorv1alpha1.APIServerServiceStatus{Name: svc.Name, ServiceType: svc.Spec.Type, Port: APIServerPort}
	for _, p := range svc.Spec.Ports {
		if p.Name == APIServerPortName {
			out.Port, out.NodePort = p.Port, p.NodePort
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		out.LoadBalancerStatus = svc.Status.LoadBalancer.DeepCopy()
	}
	return out, nil
}

// recordWarning records one Event per generation and message (re-running the step does not
// record it twice).
func (a *Activities) recordWarning(ctx context.Context, k *operatorv1alpha1.Karmada, in StatusInput) error {
	name := k.Name + "." + hashOf(in.Generation, in.Reason, in.Message)
	now := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada", Namespace: k.Namespace, Name: k.Name,
			UID: k.UID, ResourceVersion: k.ResourceVersion,
		},
		Reason: in.Reason, Message: in.Message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: ManagedBy},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	_, err := a.Host.CoreV1().Events(k.Namespace).Create(ctx, event, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording event on Karmada %s: %w", in.Ref, err)
	}
	return nil
}
