package options

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Clients are the clients of one Kubernetes API server.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// KarmadaClients are the clients of the Karmada control plane.
func (o *Options) KarmadaClients() (*Clients, error) {
	cfg, err := o.KarmadaConfig()
	if err != nil {
		return nil, err
	}
	return newClients("Karmada control plane", cfg)
}

// HostClients are the clients of the host cluster.
func (o *Options) HostClients() (*Clients, error) {
	cfg, err := o.HostConfig()
	if err != nil {
		return nil, err
	}
	return newClients("host cluster", cfg)
}

func newClients(cluster string, cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: creating client: %w", cluster, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: creating dynamic client: %w", cluster, err)
	}
	return &Clients{Config: cfg, Kube: kube, Dynamic: dyn}, nil
}

// ProxyAuthClient is the client of the proxy's TokenReviews and SubjectAccessReviews: the
// control plane's configuration with a rate limiter of its own (--proxy-auth-qps,
// --proxy-auth-burst), so that reviews never wait behind, nor hold up, the requests of the
// control plane's other clients.
func (o *Options) ProxyAuthClient(controlPlane *rest.Config) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(controlPlane)
	cfg.RateLimiter = nil
	cfg.QPS = float32(o.ProxyAuth.QPS)
	cfg.Burst = o.ProxyAuth.Burst
	cfg.UserAgent += "-proxy-auth"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Karmada control plane: creating the proxy's review client: %w", err)
	}
	return client, nil
}

// KarmadaConfig is the REST configuration of the Karmada control plane.
func (o *Options) KarmadaConfig() (*rest.Config, error) {
	return o.restConfig("Karmada control plane", o.KarmadaKubeconfig)
}

// HostConfig is the REST configuration of the host cluster.
func (o *Options) HostConfig() (*rest.Config, error) {
	return o.restConfig("host cluster", o.HostKubeconfig)
}

func (o *Options) restConfig(cluster, kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("%s: no kubeconfig given and no in-cluster config: %w", cluster, err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("%s: loading kubeconfig %s: %w", cluster, kubeconfig, err)
	}
	cfg.QPS = float32(o.KubeAPIQPS)
	cfg.Burst = o.KubeAPIBurst
	cfg.UserAgent = "karmadaflow-" + string(o.Component)
	return cfg, nil
}
