// Package members connects to member clusters. It turns a Cluster object of the control plane
// and the Secret it names (keys `token` and `caBundle`) into clients, through the forward proxy
// the Cluster names (spec.proxyURL, spec.proxyHeader) if any, presenting to an https one the
// client certificate of the Secret's keys `proxyClientCert` and `proxyClientKey` when it holds
// them, and keeps one set of clients per cluster, refreshed when the Cluster or its Secret
// changes. A Secret is used only for the Cluster it is bound to (BoundTo). A Pull cluster
// (spec.syncMode Pull) is never dialled for Work execution, collection or probes, which its
// agent runs inside it (PullClusterError); the proxy reaches one only through its
// spec.proxyURL. The agent's own registry (NewOwnRegistry) holds the one member it runs in.
package members

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	clusterv1alpha1 "github.com/karmadaflow/karmadaflow/api/cluster/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Member is the set of clients of one member cluster.
type Member struct {
	Name string
	// Config bounds each request by RequestTimeout; Kube and Dynamic are built from it.
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
	// Watching is for watches and informers: it has no request timeout, which would cut every
	// watch after RequestTimeout and have the informer list and watch again.
	Watching kubernetes.Interface

	version string // the Cluster's and Secret's resourceVersions the clients were built from
	checked time.Time
	pull    bool // a Pull cluster: no clients, Get refuses it
}

// Registry hands out member clients. It re-reads a Cluster and its Secret at most once per
// refresh interval, so the hot path costs no extra API call.
type Registry struct {
	controlPlane dynamic.Interface
	core         kubernetes.Interface
	refresh      time.Duration
	qps          float32
	burst        int

	mu            sync.Mutex
	members       map[string]*Member
	impersonators map[string]impersonator

	own *Member // set in an agent's registry: the one member it serves, and the only one
}

// NewRegistry returns a registry reading Clusters through controlPlane and Secrets through core.
func NewRegistry(controlPlane dynamic.Interface, core kubernetes.Interface) *Registry {
	return &Registry{controlPlane: controlPlane, core: core, refresh: 30 * time.Second, qps: 200, burst: 400, members: map[string]*Member{}, impersonators: map[string]impersonator{}}
}

// NewOwnRegistry returns the registry of a Pull cluster's agent: it hands out the clients of
// cfg, the member the agent runs in, for cluster, and refuses every other cluster.
func NewOwnRegistry(cluster string, cfg *rest.Config) (*Registry, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = RequestTimeout
	own, err := newMember(cluster, cfg, "")
	if err != nil {
		return nil, err
	}
	return &Registry{own: own, members: map[string]*Member{}, impersonators: map[string]impersonator{}}, nil
}

// Get returns the clients of the named cluster; a Pull cluster is refused with a
// *PullClusterError, unless this is its agent's registry.
func (r *Registry) Get(ctx context.Context, cluster string) (*Member, error) {
	if r.own != nil {
		if cluster != r.own.Name {
			return nil, fmt.Errorf("this agent serves cluster %s only, not %s", r.own.Name, cluster)
		}
		return r.own, nil
	}
	r.mu.Lock()
	m := r.members[cluster]
	r.mu.Unlock()
	if m != nil && time.Since(m.checked) < r.refresh {
		return m.usable()
	}
	cfg, version, err := r.config(ctx, cluster)
	var pull *PullClusterError
	if errors.As(err, &pull) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.members[cluster] = &Member{Name: cluster, pull: true, checked: time.Now()}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m = r.members[cluster]; m != nil && !m.pull && m.version == version {
		m.checked = time.Now()
		return m, nil
	}
	m, err = newMember(cluster, cfg, version)
	if err != nil {
		return nil, err
	}
	r.members[cluster] = m
	return m, nil
}

// usable returns m, or the refusal of a Pull cluster.
func (m *Member) usable() (*Member, error) {
	if m.pull {
		return nil, &PullClusterError{Cluster: m.Name}
	}
	return m, nil
}

// PullClusterError refuses to dial a Pull cluster: its agent, inside it, does what needs the
// member, and writes what it did into the control plane (Works' status, the Cluster's Ready
// condition, its Lease, collected Works).
type PullClusterError struct {
	Cluster string
}

func (e *PullClusterError) Error() string {
	return fmt.Sprintf("cluster %s is in Pull mode: the control plane does not dial it; its agent does the work inside it", e.Cluster)
}

// IsPull tells whether err is the refusal of a Pull cluster.
func IsPull(err error) bool {
	var pull *PullClusterError
	return errors.As(err, &pull)
}

// Forget drops the cached clients of cluster, e.g. after an authentication failure.
func (r *Registry) Forget(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.members, cluster)
	delete(r.impersonators, cluster)
}

// config is the configuration of cluster, built from its Cluster object and the Secret of
// spec.secretRef.
func (r *Registry) config(ctx context.Context, cluster string) (*rest.Config, string, error) {
	return r.configFrom(ctx, cluster, "secretRef", false)
}

// Impersonator returns the configuration of a member cluster's impersonator: the credentials
// of the Secret named by spec.impersonatorSecretRef (spec.secretRef's when the Cluster names
// none), for requests made on behalf of a caller. It is re-read at most once per refresh
// interval. A Pull cluster is reached only through its spec.proxyURL (a tunnel such as
// apiserver-network-proxy, which the member dials out to), as Karmada's proxy does.
func (r *Registry) Impersonator(ctx context.Context, cluster string) (*rest.Config, error) {
	r.mu.Lock()
	c, ok := r.impersonators[cluster]
	r.mu.Unlock()
	if ok && time.Since(c.checked) < r.refresh {
		return c.config, nil
	}
	obj, err := r.controlPlane.Resource(kube.Clusters).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", cluster, err)
	}
	field := "impersonatorSecretRef"
	if name, _, _ := unstructured.NestedString(obj.Object, "spec", field, "name"); name == "" {
		field = "secretRef"
	}
	cfg, _, err := r.configFrom(ctx, cluster, field, true)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.impersonators[cluster] = impersonator{config: cfg, checked: time.Now()}
	return cfg, nil
}

type impersonator struct {
	config  *rest.Config
	checked time.Time
}

// configFrom builds the configuration of cluster from the credentials Secret its spec names
// in secretField. A Pull cluster is refused, or, when tunnelled, accepted with a
// spec.proxyURL only.
func (r *Registry) configFrom(ctx context.Context, cluster, secretField string, tunnelled bool) (*rest.Config, string, error) {
	obj, err := r.controlPlane.Resource(kube.Clusters).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading Cluster %s: %w", cluster, err)
	}
	if IsPullCluster(obj) {
		if proxyURL, _, _ := unstructured.NestedString(obj.Object, "spec", "proxyURL"); !tunnelled || proxyURL == "" {
			return nil, "", &PullClusterError{Cluster: cluster}
		}
	}
	endpoint, _, _ := unstructured.NestedString(obj.Object, "spec", "apiEndpoint")
	secretNS, _, _ := unstructured.NestedString(obj.Object, "spec", secretField, "namespace")
	secretName, _, _ := unstructured.NestedString(obj.Object, "spec", secretField, "name")
	insecure, _, _ := unstructured.NestedBool(obj.Object, "spec", "insecureSkipTLSVerification")
	if endpoint == "" || secretName == "" {
		return nil, "", fmt.Errorf("cluster %s has no spec.apiEndpoint or spec.%s", cluster, secretField)
	}
	secret, err := r.core.CoreV1().Secrets(secretNS).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading the credentials Secret %s/%s of cluster %s: %w", secretNS, secretName, cluster, err)
	}
	// Whoever writes a Cluster chooses its endpoint and its Secret: the token goes only where
	// the Secret's own writer said it may.
	if !BoundTo(secret, obj) {
		return nil, "", &UnboundSecretError{Cluster: cluster, Field: secretField, Secret: secretNS + "/" + secretName}
	}
	cfg, err := RESTConfig(endpoint, secret, insecure)
	if err != nil {
		return nil, "", fmt.Errorf("cluster %s: %w", cluster, err)
	}
	proxy, err := proxyOf(obj)
	if err == nil {
		err = proxy.useClientCertificate(secret)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cluster %s: %w", cluster, err)
	}
	proxy.configure(cfg)
	cfg.QPS, cfg.Burst = r.qps, r.burst
	return cfg, obj.GetResourceVersion() + "/" + secret.ResourceVersion, nil
}

// IsPullCluster tells whether a Cluster object is in Pull mode (spec.syncMode Pull).
func IsPullCluster(cluster *unstructured.Unstructured) bool {
	mode, _, _ := unstructured.NestedString(cluster.Object, "spec", "syncMode")
	return mode == string(clusterv1alpha1.Pull)
}

// UnboundSecretError is the refusal of a Cluster whose credentials Secret is not bound to it:
// the cluster is not dialled.
type UnboundSecretError struct {
	Cluster string
	Field   string // spec.secretRef or spec.impersonatorSecretRef
	Secret  string // namespace/name
}

func (e *UnboundSecretError) Error() string {
	return fmt.Sprintf("cluster %s: the credentials Secret %s (spec.%s) is not bound to Cluster %s, so its token is not sent: "+
		"bind it with an ownerReference to the Cluster, as `karmadactl join` writes", e.Cluster, e.Secret, e.Field, e.Cluster)
}

// BoundTo tells whether secret is bound to the Cluster cluster: it holds an ownerReference to
// that very Cluster (group cluster.karmada.io, kind Cluster, its name and uid). It is the
// reference `karmadactl join` writes on the Secrets it creates, so members joined the usual
// way need nothing more; a Cluster naming another cluster's Secret, or one nobody bound, is
// refused.
func BoundTo(secret *corev1.Secret, cluster *unstructured.Unstructured) bool {
	for _, ref := range secret.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == kube.Clusters.Group && ref.Kind == "Cluster" &&
			ref.Name == cluster.GetName() && ref.UID == cluster.GetUID() && ref.UID != "" {
			return true
		}
	}
	return false
}

// RequestTimeout bounds each request to a member cluster, except watches.
const RequestTimeout = 10 * time.Second

// RESTConfig builds a client config for an API endpoint from a credentials Secret with keys
// `token` and, optionally, `caBundle`.
func RESTConfig(endpoint string, secret *corev1.Secret, insecure bool) (*rest.Config, error) {
	token := string(secret.Data["token"])
	if token == "" {
		return nil, fmt.Errorf("secret %s/%s has no token", secret.Namespace, secret.Name)
	}
	cfg := &rest.Config{Host: endpoint, BearerToken: token, Timeout: RequestTimeout}
	cfg.TLSClientConfig.CAData = secret.Data["caBundle"]
	cfg.TLSClientConfig.Insecure = insecure && len(cfg.TLSClientConfig.CAData) == 0
	return cfg, nil
}

func newMember(name string, cfg *rest.Config, version string) (*Member, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	watching, err := kubernetes.NewForConfig(watchCfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kc.Discovery()))
	return &Member{Name: name, Config: cfg, Kube: kc, Dynamic: dc, Mapper: mapper, Watching: watching, version: version, checked: time.Now()}, nil
}
