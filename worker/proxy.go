package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/pki"
	"github.com/karmadaflow/karmadaflow/proxy"
	"github.com/karmadaflow/karmadaflow/proxy/searchapi"
)

// serveProxy serves the global resource proxy until ctx is done: on its own, or as the search
// API server behind karmada-apiserver.
func serveProxy(ctx context.Context, deps dependencies) error {
	if deps.Options.ServeSearchAPI {
		return serveSearchAPI(ctx, deps)
	}
	opts, logger := deps.Options, deps.Logger.Named("proxy")
	warnSelfSigned(opts.ProxySelfSignedCertificate, logger)
	tlsConfig, err := proxyTLS(opts.ProxyTLSCertFile, opts.ProxyTLSKeyFile, opts.ProxyClientCAFile)
	if err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(deps.ControlPlane.Dynamic, 10*time.Minute)
	view := proxyView{registries: factory.ForResource(kube.ResourceRegistries).Lister(), clusters: factory.ForResource(kube.Clusters).Lister()}
	factory.Start(ctx.Done())
	if err := waitForCaches(ctx, factory); err != nil {
		return err
	}
	handler, err := newProxy(deps, &view)
	if err != nil {
		return err
	}

	listener, err := net.Listen("tcp", opts.ProxyBindAddress)
	if err != nil {
		return fmt.Errorf("proxy: listening on %s: %w", opts.ProxyBindAddress, err)
	}
	// Headers must arrive within ReadHeaderTimeout, and a connection idle (no request in
	// flight) for IdleTimeout is closed; a request's body has the proxy's own deadline
	// (--proxy-request-body-timeout), which watches and streams do not. No ReadTimeout: it
	// would end every watch and exec session.
	server := &http.Server{Handler: handler, TLSConfig: tlsConfig, ReadHeaderTimeout: proxyReadHeaderTimeout,
		IdleTimeout: proxyIdleTimeout, ErrorLog: zap.NewStdLog(logger)}
	logger.Info("serving the global resource proxy", zap.String("url", "https://"+listener.Addr().String()+proxy.BasePath))
	served := make(chan error, 1)
	go func() { served <- server.ServeTLS(listener, "", "") }()
	select {
	case err := <-served:
		return fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("proxy: %w", err)
		}
		return nil
	}
}

// The proxy server's own timeouts: headers in 10 s (as before), and 90 s of idleness (as
// net/http's and kube-apiserver's HTTP/2 idle connections).
const (
	proxyReadHeaderTimeout = 10 * time.Second
	proxyIdleTimeout       = 90 * time.Second
)

// serveSearchAPI serves the proxy and ResourceRegistries as the search.karmada.io API server
// until ctx is done. The proxy reads ResourceRegistries from the server itself, and Clusters
// from the control plane; it answers 503 until it has read both.
func serveSearchAPI(ctx context.Context, deps dependencies) error {
	opts, logger := deps.Options, deps.Logger.Named("proxy")
	warnSelfSigned(opts.ProxySelfSignedCertificate, logger)
	var view proxyView
	handler, err := newProxy(deps, &view)
	if err != nil {
		return err
	}
	server, err := searchapi.New(searchapi.Options{
		BindAddress: opts.ProxyBindAddress, CertFile: opts.ProxyTLSCertFile, KeyFile: opts.ProxyTLSKeyFile,
		ClientCAFile: opts.ProxyClientCAFile, Kubeconfig: opts.KarmadaKubeconfig,
		EtcdServers: opts.SearchEtcdServers, EtcdPrefix: opts.SearchEtcdPrefix,
		EtcdCAFile: opts.SearchEtcdCAFile, EtcdCertFile: opts.SearchEtcdCert, EtcdKeyFile: opts.SearchEtcdKey,
	}, handler)
	if err != nil {
		return fmt.Errorf("search API: %w", err)
	}
	own, err := dynamic.NewForConfig(server.LoopbackConfig())
	if err != nil {
		return err
	}
	registries := dynamicinformer.NewDynamicSharedInformerFactory(own, 10*time.Minute)
	clusters := dynamicinformer.NewDynamicSharedInformerFactory(deps.ControlPlane.Dynamic, 10*time.Minute)
	view = proxyView{registries: registries.ForResource(kube.ResourceRegistries).Lister(), clusters: clusters.ForResource(kube.Clusters).Lister()}
	go func() {
		registries.Start(ctx.Done())
		clusters.Start(ctx.Done())
		if waitForCaches(ctx, registries) == nil && waitForCaches(ctx, clusters) == nil {
			server.SetReady()
		}
	}()
	logger.Info("serving the search API with the global resource proxy", zap.String("url", "https://"+opts.ProxyBindAddress+proxy.BasePath))
	if err := server.Run(ctx); err != nil {
		return fmt.Errorf("search API: %w", err)
	}
	return nil
}

// proxyView is what the proxy routes by: the ResourceRegistries and Clusters as last seen.
type proxyView struct {
	registries, clusters cache.GenericLister
}

func (v *proxyView) state() ([]searchv1alpha1.ResourceRegistry, []proxy.Cluster) {
	var rs []searchv1alpha1.ResourceRegistry
	if objs, err := v.registries.List(labels.Everything()); err == nil {
		for _, o := range objs {
			if r, err := proxy.RegistryFromObject(o.(*unstructured.Unstructured)); err == nil {
				rs = append(rs, r)
			}
		}
	}
	var cs []proxy.Cluster
	if objs, err := v.clusters.List(labels.Everything()); err == nil {
		for _, o := range objs {
			cs = append(cs, proxy.ClusterFromObject(o.(*unstructured.Unstructured)))
		}
	}
	return rs, cs
}

// newProxy is the proxy handler, routing by view. Its reviews of callers go through a client
// of their own, rate-limited apart from the control plane's other clients.
func newProxy(deps dependencies, view *proxyView) (*proxy.Server, error) {
	auth, err := deps.Options.ProxyAuthClient(deps.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	pa := deps.Options.ProxyAuth
	return proxy.NewServer(proxy.Config{
		ControlPlane: deps.ControlPlane.Config,
		Auth:         auth,
		Reviews: proxy.ReviewOptions{CacheTTL: pa.CacheTTL, FailureCacheTTL: pa.FailureCacheTTL, MaxInFlight: pa.MaxInFlight,
			SourceQPS: pa.SourceQPS, SourceBurst: pa.SourceBurst},
		Member:  deps.Members.Impersonator,
		State:   view.state,
		Kind:    kindMapper(deps.ControlPlane.Kube.Discovery()),
		Timeout: deps.Options.ProxyRequestTimeout,
		Limits:  proxy.Limits(deps.Options.ProxyLimits), // the same fields
		Logger:  deps.Logger.Named("proxy"),

		ServiceAccounts: proxy.ServiceAccountIdentity(deps.Options.ProxyServiceAccountIdentity),
	}), nil
}

// waitForCaches waits until every informer of factory has listed once.
func waitForCaches(ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory) error {
	for gvr, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("proxy: the cache of %s did not sync", gvr.Resource)
		}
	}
	return nil
}

// kindMapper maps resources to kinds with the control plane's discovery, reading discovery
// again (at most every 10 s) when a resource is unknown.
func kindMapper(client discovery.DiscoveryInterface) func(schema.GroupVersionResource) (string, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client))
	var mu sync.Mutex
	var lastReset time.Time
	return func(gvr schema.GroupVersionResource) (string, error) {
		gvk, err := mapper.KindFor(gvr)
		if meta.IsNoMatchError(err) {
			mu.Lock()
			if time.Since(lastReset) > 10*time.Second {
				lastReset = time.Now()
				mapper.Reset()
			}
			mu.Unlock()
			gvk, err = mapper.KindFor(gvr)
		}
		return gvk.Kind, err
	}
}

// warnSelfSigned says, when selfSigned, what serving a self-signed certificate costs.
func warnSelfSigned(selfSigned bool, logger *zap.Logger) {
	if selfSigned {
		logger.Warn("the proxy serves a self-signed certificate made at start (--proxy-self-signed-certificate): no caller can verify it, and a caller that skips verification sends its token to whoever answers; for local development only")
	}
}

// proxyTLS is the proxy's TLS configuration: the given certificate or, without one (options
// allow that only with --proxy-self-signed-certificate), a self-signed one, and client
// certificates of caFile as identities when it is set.
func proxyTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if certFile != "" {
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	} else {
		cert, err = selfSigned()
	}
	if err != nil {
		return nil, fmt.Errorf("proxy serving certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("proxy client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxy client CA %s holds no PEM certificate", caFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// selfSigned makes a certificate for localhost and 127.0.0.1, kept in memory only, as is the
// CA of internal/pki that signs it.
func selfSigned() (tls.Certificate, error) {
	ca, err := pki.NewAuthority("karmadaflow-proxy-ca")
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := ca.Issue(pki.LeafSpec{CommonName: "karmadaflow-proxy", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}, pki.DefaultLeafValidity)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(pair.Cert, pair.Key)
}
