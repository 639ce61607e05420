package searchapi

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/proxy"
)

// Options configure the search API server.
type Options struct {
	// BindAddress is host:port to listen on, over TLS with CertFile and KeyFile (a
	// self-signed certificate when both are empty).
	BindAddress       string
	CertFile, KeyFile string
	// ClientCAFile holds the CAs of client certificates accepted as identities, for callers
	// of the direct URL; the front-proxy CA comes from the control plane.
	ClientCAFile string
	// Kubeconfig reaches the Karmada control plane, which reviews tokens and access and
	// publishes the aggregator's front-proxy CA (kube-system/extension-apiserver-authentication).
	// Empty means the in-cluster configuration.
	Kubeconfig string
	// Etcd is where ResourceRegistries are kept: Prefix/search.karmada.io/resourceregistries/,
	// as karmada-search keeps them.
	EtcdServers                           []string
	EtcdPrefix                            string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
}

// Server is the search API server, ready to run.
type Server struct {
	server *genericapiserver.GenericAPIServer
	ready  *atomic.Bool
}

// New builds the server with the proxy that serves proxying/karmada/proxy.
func New(o Options, p *proxy.Server) (*Server, error) {
	crdSchema, err := loadRegistrySchema()
	if err != nil {
		return nil, err
	}
	config := genericapiserver.NewRecommendedConfig(Codecs)
	config.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("1.36", "", "")
	namer := openapinamer.NewDefinitionNamer(Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(crdSchema.definitions, namer)
	config.OpenAPIConfig.Info.Title = "karmadaflow search"
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(crdSchema.definitions, namer)
	config.OpenAPIV3Config.Info.Title = "karmadaflow search"
	// Watches and every request through the proxy may last: logs -f, exec, port-forward.
	config.LongRunningFunc = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	if err := applyOptions(o, &config.Config); err != nil {
		return nil, err
	}

	server, err := config.Complete().New("karmadaflow-search", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	registries, status, err := registryStorage(crdSchema, config.RESTOptionsGetter)
	if err != nil {
		return nil, err
	}
	ready := &atomic.Bool{}
	group := genericapiserver.NewDefaultAPIGroupInfo(searchv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	group.VersionedResourcesStorageMap[searchv1alpha1.GroupVersion.Version] = map[string]rest.Storage{
		searchv1alpha1.ResourceResourceRegistry:             registries,
		searchv1alpha1.ResourceResourceRegistry + "/status": status,
		"proxying": &proxyingREST{proxy: p, ready: ready, authz: config.Authorization.Authorizer},
	}
	if err := server.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	return &Server{server: server, ready: ready}, nil
}

// applyOptions sets serving, delegated authentication and authorization, and etcd storage.
func applyOptions(o Options, config *genericapiserver.Config) error {
	host, port, err := net.SplitHostPort(o.BindAddress)
	if err != nil {
		return fmt.Errorf("search API bind address %q: %w", o.BindAddress, err)
	}
	serving := options.NewSecureServingOptions().WithLoopback()
	serving.BindAddress = net.ParseIP(host)
	if serving.BindPort, err = strconv.Atoi(port); err != nil || serving.BindAddress == nil {
		return fmt.Errorf("search API bind address %q: an IP and a port are required", o.BindAddress)
	}
	serving.HTTP2MaxStreamsPerConnection = 1000 // the aggregator multiplexes many callers onto one connection
	serving.ServerCert.CertKey.CertFile, serving.ServerCert.CertKey.KeyFile = o.CertFile, o.KeyFile
	if o.CertFile == "" {
		if err := serving.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{serving.BindAddress}); err != nil {
			return err
		}
	}
	if err := serving.ApplyTo(&config.SecureServing, &config.LoopbackClientConfig); err != nil {
		return err
	}

	authentication := options.NewDelegatingAuthenticationOptions()
	authentication.RemoteKubeConfigFile = o.Kubeconfig
	authentication.ClientCert.ClientCA = o.ClientCAFile
	if err := authentication.ApplyTo(&config.Authentication, config.SecureServing, config.OpenAPIConfig); err != nil {
		return err
	}
	authorization := options.NewDelegatingAuthorizationOptions()
	authorization.RemoteKubeConfigFile = o.Kubeconfig
	if err := authorization.ApplyTo(&config.Authorization); err != nil {
		return err
	}

	etcd := options.NewEtcdOptions(storagebackend.NewDefaultConfig(o.EtcdPrefix, Codecs.LegacyCodec(searchv1alpha1.GroupVersion)))
	etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(searchv1alpha1.GroupVersion,
		schema.GroupKind{Group: searchv1alpha1.GroupName})
	etcd.StorageConfig.Transport.ServerList = o.EtcdServers
	etcd.StorageConfig.Transport.TrustedCAFile = o.EtcdCAFile
	etcd.StorageConfig.Transport.CertFile, etcd.StorageConfig.Transport.KeyFile = o.EtcdCertFile, o.EtcdKeyFile
	if errs := etcd.Validate(); len(errs) > 0 {
		return fmt.Errorf("search API etcd: %v", errs)
	}
	return etcd.ApplyTo(config)
}

// LoopbackConfig reaches the server itself with full rights, for the worker's own reads of
// ResourceRegistries.
func (s *Server) LoopbackConfig() *restclient.Config {
	return restclient.CopyConfig(s.server.LoopbackClientConfig)
}

// SetReady tells the server that the proxy knows the ResourceRegistries and Clusters.
func (s *Server) SetReady() { s.ready.Store(true) }

// Run serves until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	return s.server.PrepareRun().RunWithContext(ctx)
}
