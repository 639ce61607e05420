package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// Activities holds the clients of the host cluster the control planes are installed into.
type Activities struct {
	Host        kubernetes.Interface
	HostDynamic dynamic.Interface
	// PollInterval is how often the waits look; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// CRDSource is where the control planes' CRDs come from when a Karmada names no tarball.
	CRDSource CRDSource
}

// DefaultPollInterval is how often the waits look by default: pods turn Ready and CRDs
// Established within a fraction of a second, so a second would mostly be idle.
const DefaultPollInterval = 250 * time.Millisecond

// ErrNotFound is the ApplicationError type of a Karmada object that no longer exists.
const ErrNotFound = "KarmadaNotFound"

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

// ValidateKarmada reads the Karmada and checks its spec. An invalid spec is a non-retryable
// ValidationError whose details are the Summary.
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
	if sum.Deleting {
		return sum, nil
	}
	sum.Invalid = Validate(k)
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

// AddKarmadaFinalizer adds the finalizer that holds the Karmada until Uninstall is done.
func (a *Activities) AddKarmadaFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizer(ctx, ref, true)
}

// RemoveKarmadaFinalizer releases the Karmada.
func (a *Activities) RemoveKarmadaFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizer(ctx, ref, false)
}

func (a *Activities) updateFinalizer(ctx context.Context, ref Ref, present bool) error {
	client := a.HostDynamic.Resource(kube.Karmadas).Namespace(ref.Namespace)
	obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Karmada %s: %w", ref, err)
	}
	finalizers := obj.GetFinalizers()
	has := slices.Contains(finalizers, operatorv1alpha1.Finalizer)
	switch {
	case present == has:
		return nil
	case present:
		finalizers = append(finalizers, operatorv1alpha1.Finalizer)
	default:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == operatorv1alpha1.Finalizer })
	}
	obj.SetFinalizers(finalizers)
	if _, err := client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating finalizers of Karmada %s: %w", ref, err)
	}
	return nil
}

// GenerateCertificates makes sure the cert, etcd-cert and webhook-cert Secrets exist and
// hold what the spec needs. Keys are generated once and never leave the Secrets.
func (a *Activities) GenerateCertificates(ctx context.Context, ref Ref) (Certificates, error) {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return Certificates{}, err
	}
	addresses, err := t.certAddresses(ctx, k)
	if err != nil {
		return Certificates{}, err
	}
	return t.ensureCertificates(ctx, k, addresses)
}

func (t *target) ensureCertificates(ctx context.Context, k *operatorv1alpha1.Karmada, addresses []string) (Certificates, error) {
	names := NamesFor(k.Name)
	var customCA *pki.KeyPair
	if c := k.Spec.CustomCertificate; c != nil && c.APIServerCACert != nil {
		ref, err := secretRef(k, *c.APIServerCACert)
		if err != nil {
			return Certificates{}, err
		}
		secret, err := t.a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return Certificates{}, fmt.Errorf("reading CA Secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		customCA = &pki.KeyPair{Cert: secret.Data[KeyTLSCert], Key: secret.Data[KeyTLSKey]}
	}
	certs, err := t.ensureSecret(ctx, k, names.Of(SuffixCert), APIServer.Name, certSecretContents(k, customCA, addresses))
	if err != nil {
		return Certificates{}, err
	}
	ca, err := pki.ParseAuthority(pki.KeyPair{Cert: certs[KeyCACert], Key: certs[KeyCAKey]})
	if err != nil {
		return Certificates{}, fmt.Errorf("CA of Secret %s/%s: %w", k.Namespace, names.Of(SuffixCert), err)
	}
	fill := etcdSecretContents(k)
	if externalEtcd(k) {
		ref, err := secretRef(k, k.Spec.Components.Etcd.External.SecretRef)
		if err != nil {
			return Certificates{}, err
		}
		external, err := t.a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return Certificates{}, fmt.Errorf("reading external etcd Secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		fill = externalEtcdContents(external)
	}
	etcd, err := t.ensureSecret(ctx, k, names.Of(SuffixEtcdCert), Etcd.Name, fill)
	if err != nil {
		return Certificates{}, err
	}
	webhook, err := t.ensureSecret(ctx, k, names.Of(SuffixWebhookCert), Webhook.Name, webhookSecretContents(k, ca))
	if err != nil {
		return Certificates{}, err
	}
	return Certificates{CertHash: hashOf(publicHash(certs), publicHash(etcd), publicHash(webhook))}, nil
}

// certAddresses are the addresses the API server certificate must name besides the fixed
// ones: the node address for NodePort, the load-balancer address once known.
func (t *target) certAddresses(ctx context.Context, k *operatorv1alpha1.Karmada) ([]string, error) {
	switch ServiceType(k) {
	case corev1.ServiceTypeNodePort:
		addr, err := t.nodeAddress(ctx)
		if err != nil {
			return nil, err
		}
		return []string{addr}, nil
	case corev1.ServiceTypeLoadBalancer:
		svc, err := t.kube.CoreV1().Services(k.Namespace).Get(ctx, NamesFor(k.Name).Of(SuffixAPIServer), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Service %s/%s: %w", k.Namespace, NamesFor(k.Name).Of(SuffixAPIServer), err)
		}
		return ingressAddresses(svc), nil
	}
	return nil, nil
}

func ingressAddresses(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
		if in.Hostname != "" {
			out = append(out, in.Hostname)
		}
	}
	return out
}

// nodeAddress is the address NodePort Services are reached at: the InternalIP (else the
// ExternalIP) of the first Ready node by name.
func (t *target) nodeAddress(ctx context.Context) (string, error) {
	nodes, err := t.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing nodes of the host cluster: %w", err)
	}
	items := nodes.Items
	slices.SortFunc(items, func(x, y corev1.Node) int { return strings.Compare(x.Name, y.Name) })
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, n := range items {
			if !nodeReady(n) {
				continue
			}
			for _, addr := range n.Status.Addresses {
				if addr.Type == typ && addr.Address != "" {
					return addr.Address, nil
				}
			}
		}
	}
	return "", errors.New("no Ready node of the host cluster has an address")
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// EnsureNamespace creates the namespace of the instance in its host cluster if it does not
// exist (a remote host cluster may not have it).
func (a *Activities) EnsureNamespace(ctx context.Context, ref Ref) error {
	_, t, err := a.instance(ctx, ref)
	if err != nil {
		return err
	}
	_, err = t.kube.CoreV1().Namespaces().Get(ctx, ref.Namespace, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("reading namespace %s: %w", ref.Namespace, err)
		}
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}
	if _, err := t.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ref.Namespace, err)
	}
	return nil
}

// InstallEtcd applies the local etcd's Services, StatefulSet and PDB.
func (a *Activities) InstallEtcd(ctx context.Context, in InstallInput) error {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return err
	}
	if externalEtcd(k) {
		return t.removeComponent(ctx, k, Etcd)
	}
	sts, services := EtcdObjects(k, in.CertHash)
	for _, svc := range services {
		if _, err := a.apply(ctx, t.dyn, svc); err != nil {
			return err
		}
	}
	if _, err := a.apply(ctx, t.dyn, sts); err != nil {
		return err
	}
	return t.ensurePDB(ctx, k, Etcd)
}

// WaitEtcdReady waits, heartbeating, until etcd has a Ready pod.
func (a *Activities) WaitEtcdReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(k *operatorv1alpha1.Karmada) []Component {
		if externalEtcd(k) {
			return nil
		}
		return []Component{Etcd}
	})
}

// InstallAPIServer applies the API server's Service, Deployment and PDB and returns the
// Service as the API server allocated it.
func (a *Activities) InstallAPIServer(ctx context.Context, in InstallInput) (ServiceInfo, error) {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return ServiceInfo{}, err
	}
	applied, err := a.apply(ctx, t.dyn, APIServerService(k))
	if err != nil {
		return ServiceInfo{}, err
	}
	var svc corev1.Service
	if err := kube.FromUnstructured(applied, &svc); err != nil {
		return ServiceInfo{}, err
	}
	if _, err := a.apply(ctx, t.dyn, APIServerDeployment(k, in.CertHash)); err != nil {
		return ServiceInfo{}, err
	}
	if err := t.ensurePDB(ctx, k, APIServer); err != nil {
		return ServiceInfo{}, err
	}
	info := ServiceInfo{Name: svc.Name, ServiceType: string(svc.Spec.Type), Port: APIServerPort}
	if len(svc.Spec.Ports) > 0 {
		info.NodePort = svc.Spec.Ports[0].NodePort
	}
	return info, nil
}

// WaitLoadBalancer waits, heartbeating, until the API server's LoadBalancer Service has an
// ingress address, and returns it. It never gives up: the workflow cancels it on a change.
func (a *Activities) WaitLoadBalancer(ctx context.Context, ref Ref) (string, error) {
	_, t, err := a.instance(ctx, ref)
	if err != nil {
		return "", err
	}
	name := NamesFor(ref.Name).Of(SuffixAPIServer)
	for {
		svc, err := t.kube.CoreV1().Services(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading Service %s/%s: %w", ref.Namespace, name, err)
		}
		if err == nil {
			if addrs := ingressAddresses(svc); len(addrs) > 0 {
				return addrs[0], nil
			}
		}
		if err := a.pause(ctx, "waiting for a load-balancer address on Service "+ref.Namespace+"/"+name); err != nil {
			return "", err
		}
	}
}

// CertifyLoadBalancer makes the API server certificate name the load-balancer address and
// rolls the API server if the certificate was re-issued.
func (a *Activities) CertifyLoadBalancer(ctx context.Context, in LoadBalancerInput) (Certificates, error) {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return Certificates{}, err
	}
	certs, err := t.ensureCertificates(ctx, k, []string{in.Address})
	if err != nil {
		return Certificates{}, err
	}
	if _, err := a.apply(ctx, t.dyn, APIServerDeployment(k, certs.CertHash)); err != nil {
		return Certificates{}, err
	}
	return certs, nil
}

// WaitAPIServerReady waits, heartbeating, until the API server has a Ready pod.
func (a *Activities) WaitAPIServerReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(*operatorv1alpha1.Karmada) []Component { return []Component{APIServer} })
}

// InstallAggregatedAPIServer applies karmada-aggregated-apiserver's Deployment, Service and PDB.
func (a *Activities) InstallAggregatedAPIServer(ctx context.Context, in InstallInput) error {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return err
	}
	d, svc := AggregatedAPIServerObjects(k, in.CertHash)
	if _, err := a.apply(ctx, t.dyn, svc); err != nil {
		return err
	}
	if _, err := a.apply(ctx, t.dyn, d); err != nil {
		return err
	}
	return t.ensurePDB(ctx, k, AggregatedAPIServer)
}

// WaitAggregatedAPIServerReady waits, heartbeating, until the aggregated API server has a
// Ready pod.
func (a *Activities) WaitAggregatedAPIServerReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(*operatorv1alpha1.Karmada) []Component { return []Component{AggregatedAPIServer} })
}

// InstallComponents applies the Deployment, Service and PDB of every component the spec
// installs, removes those of optional components it no longer names, and returns the names
// of the installed ones.
func (a *Activities) InstallComponents(ctx context.Context, in InstallInput) ([]string, error) {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return nil, err
	}
	var installed []string
	for _, c := range Components {
		if !Installed(k, c) {
			if err := t.removeComponent(ctx, k, c); err != nil {
				return nil, err
			}
			continue
		}
		d, svc := ComponentObjects(k, c, in.CertHash)
		if svc != nil {
			if _, err := a.apply(ctx, t.dyn, svc); err != nil {
				return nil, err
			}
		}
		if _, err := a.apply(ctx, t.dyn, d); err != nil {
			return nil, err
		}
		if err := t.ensurePDB(ctx, k, c); err != nil {
			return nil, err
		}
		installed = append(installed, c.Name)
	}
	return installed, nil
}

// WaitComponentsReady waits, heartbeating, until every installed component's rollout is
// complete.
func (a *Activities) WaitComponentsReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, InstalledComponents)
}

// pause heartbeats what is awaited and sleeps one poll interval.
func (a *Activities) pause(ctx context.Context, what string) error {
	heartbeat(ctx, what)
	interval := a.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(interval):
		return nil
	}
}

func heartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details...)
	}
}

// ensurePDB applies the PDB of c, or removes ours when the spec asks for none.
func (t *target) ensurePDB(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) error {
	if pdb := podDisruptionBudget(k, c); pdb != nil {
		_, err := t.a.apply(ctx, t.dyn, pdb)
		return err
	}
	return t.deleteOurs(ctx, k, pdbs, NamesFor(k.Name).Of(c.Suffix))
}

// removeComponent deletes the Deployment (or StatefulSet), Services and PDB of a component
// the spec no longer installs.
func (t *target) removeComponent(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) error {
	sel := LabelManagedBy + "=" + ManagedBy + "," + LabelName + "=" + c.Name + "," + LabelInstance + "=" + k.Name
	for _, gvr := range []schema.GroupVersionResource{deployments, statefulSets, services, pdbs} {
		if _, err := t.deleteSelected(ctx, k.Namespace, gvr, sel); err != nil {
			return err
		}
	}
	return nil
}

// Resources the activities write in the host cluster.
var (
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	services     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	secrets      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	pdbs         = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// deleteOurs deletes one named object if it carries our managed-by label.
func (t *target) deleteOurs(ctx context.Context, k *operatorv1alpha1.Karmada, gvr schema.GroupVersionResource, name string) error {
	client := t.dyn.Resource(gvr).Namespace(k.Namespace)
	obj, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", gvr.Resource, k.Namespace, name, err)
	}
	if obj.GetLabels()[LabelManagedBy] != ManagedBy || obj.GetLabels()[LabelInstance] != k.Name {
		return nil
	}
	return t.a.deleteObject(ctx, client, obj)
}

func (a *Activities) deleteObject(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// deleteSelected deletes every object of gvr in namespace matching selector and returns how
// many there were.
func (t *target) deleteSelected(ctx context.Context, namespace string, gvr schema.GroupVersionResource, selector string) (int, error) {
	client := t.dyn.Resource(gvr).Namespace(namespace)
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, fmt.Errorf("listing %s in %s: %w", gvr.Resource, namespace, err)
	}
	for i := range list.Items {
		if err := t.a.deleteObject(ctx, client, &list.Items[i]); err != nil {
			return 0, err
		}
	}
	return len(list.Items), nil
}

// Uninstall deletes every object of the instance that carries our managed-by and instance
// labels (workloads, Services, PDBs, Secrets and kubeconfig Secrets) in its host cluster and,
// for a remote host cluster, the local copies of its Secrets; it returns how many. Objects
// without our labels are never touched.
func (a *Activities) Uninstall(ctx context.Context, ref Ref) (int, error) {
	_, t, err := a.instance(ctx, ref)
	if err != nil {
		return 0, err
	}
	clusters := []*target{t}
	if t.remote {
		clusters = append(clusters, a.local())
	}
	total := 0
	for _, c := range clusters {
		for _, gvr := range []schema.GroupVersionResource{deployments, statefulSets, services, pdbs, secrets} {
			n, err := c.deleteSelected(ctx, ref.Namespace, gvr, InstanceSelector(ref.Name))
			if err != nil {
				return total, err
			}
			total += n
			heartbeat(ctx, total)
		}
	}
	return total, nil
}

// apply writes a typed object (apiVersion and kind set) with server-side apply to the
// cluster of client.
func (a *Activities) apply(ctx context.Context, client dynamic.Interface, obj any) (*unstructured.Unstructured, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		var err error
		if u, err = kube.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	gvr := gv.WithResource(strings.ToLower(u.GetKind()) + "s")
	var resource dynamic.ResourceInterface = client.Resource(gvr)
	if u.GetNamespace() != "" {
		resource = client.Resource(gvr).Namespace(u.GetNamespace())
	}
	out, err := kube.Apply(ctx, resource, u)
	if err != nil && kube.IsPermanent(err) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidObject", err)
	}
	return out, err
}
