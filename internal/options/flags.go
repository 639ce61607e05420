package options

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/karmadaflow/karmadaflow/internal/version"
)

// The command line and the environment: the flags registered, parsed together with their
// environment variables, and described.

// AddFlags registers the flags of o's component on fs, with o's current values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.TemporalAddress, "temporal-address", o.TemporalAddress, "host:port of the Temporal frontend")
	fs.StringVar(&o.TemporalNamespace, "temporal-namespace", o.TemporalNamespace, "Temporal namespace")
	fs.StringVar(&o.TaskQueue, "task-queue", o.TaskQueue, "Temporal task queue of karmadaflow's workflows and activities")
	fs.BoolVar(&o.TemporalTLS, "temporal-tls", o.TemporalTLS, "connect to Temporal over TLS (implied by the other --temporal-tls-* flags and --temporal-api-key-file)")
	fs.StringVar(&o.TemporalTLSCAFile, "temporal-tls-ca-file", o.TemporalTLSCAFile, "CA bundle that verifies the Temporal frontend (empty: the system's roots)")
	fs.StringVar(&o.TemporalTLSCertFile, "temporal-tls-cert-file", o.TemporalTLSCertFile, "client certificate for mutual TLS with Temporal")
	fs.StringVar(&o.TemporalTLSKeyFile, "temporal-tls-key-file", o.TemporalTLSKeyFile, "private key of --temporal-tls-cert-file")
	fs.StringVar(&o.TemporalTLSServerName, "temporal-tls-server-name", o.TemporalTLSServerName, "name the Temporal frontend's certificate is verified for (empty: the host of --temporal-address)")
	fs.StringVar(&o.WorkflowIDPrefix, "workflow-id-prefix", o.WorkflowIDPrefix, "prefix of every workflow ID (e.g. \"eu/\"), so that installations with their own --task-queue can share one namespace")
	fs.StringVar(&o.TemporalAPIKeyFile, "temporal-api-key-file", o.TemporalAPIKeyFile, "file holding a Temporal Cloud API key (read again when it changes)")

	fs.StringVar(&o.KarmadaKubeconfig, "karmada-kubeconfig", o.KarmadaKubeconfig, "kubeconfig of the Karmada control plane (empty: in-cluster config)")
	fs.StringVar(&o.HostKubeconfig, "host-kubeconfig", o.HostKubeconfig, "kubeconfig of the host cluster (empty: in-cluster config)")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to each Kubernetes API server")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to each Kubernetes API server")

	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "host:port serving /metrics, /healthz and /readyz")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "log format: json or console")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long a graceful shutdown may take")

	fs.BoolVar(&o.EnableWorkExecution, "enable-work-execution", o.EnableWorkExecution, "apply Works to member clusters (standalone mode; off beside karmada-controller-manager)")
	fs.BoolVar(&o.EnableProvisioning, "enable-provisioning", o.EnableProvisioning, "install a Karmada control plane for every Karmada object of the host cluster (needs the Karmada CRD there)")
	fs.BoolVar(&o.EnableClusterHealth, "enable-cluster-health", o.EnableClusterHealth, "probe member clusters and keep their Ready condition (standalone mode; off beside karmada-controller-manager)")

	fs.DurationVar(&o.WorkflowTaskTimeout, "workflow-task-timeout", o.WorkflowTaskTimeout, "bound of each workflow task: the starter starts runs with it and the worker continues runs as new with it (set both alike); a task held by a worker that crashed goes to another worker after it")

	switch o.Component {
	case Worker:
		fs.StringVar(&o.Cluster, "cluster", o.Cluster, "run as the agent of this Pull member cluster, inside it: --host-kubeconfig (empty: in-cluster config) is the member, and only that cluster's Work execution, EndpointSlice collection and health probe run here, from the task queue <task-queue>/cluster/<name>; every connection is outbound")
		fs.DurationVar(&o.NamespaceRetention, "temporal-namespace-retention", o.NamespaceRetention, "retention of closed workflows in the namespace `worker bootstrap` registers (when missing)")
		fs.DurationVar(&o.ClusterUnhealthyGrace, "cluster-unhealthy-grace", o.ClusterUnhealthyGrace, "how long a provider cluster may be not Ready before its EndpointSlices are withdrawn from consumers")
		fs.DurationVar(&o.StickyScheduleToStartTimeout, "sticky-schedule-to-start-timeout", o.StickyScheduleToStartTimeout, "how long a workflow task waits for the worker that has the workflow cached before any worker takes it (the delay after a worker crash)")
		fs.IntVar(&o.MaxConcurrentActivities, "max-concurrent-activities", o.MaxConcurrentActivities, "activities this worker runs at once (0: SDK default)")
		fs.IntVar(&o.MaxConcurrentWorkflowTasks, "max-concurrent-workflow-tasks", o.MaxConcurrentWorkflowTasks, "workflow tasks this worker runs at once (default: 4 per CPU); a task waits for its local activities, so more tasks than the CPUs serve only make each one longer, until the SDK heartbeats it")
		fs.IntVar(&o.MaxConcurrentLocalActivities, "max-concurrent-local-activities", o.MaxConcurrentLocalActivities, "local activities (short API calls of the reconcile loops) this worker runs at once; more queue in the worker instead of overloading the API servers")
		fs.BoolVar(&o.EnableProxy, "enable-proxy", o.EnableProxy, "serve the global resource proxy")
		fs.StringVar(&o.ProxyBindAddress, "proxy-bind-address", o.ProxyBindAddress, "host:port the global resource proxy listens on")
		fs.StringVar(&o.ProxyTLSCertFile, "proxy-tls-cert-file", o.ProxyTLSCertFile, "serving certificate of the proxy (empty: a self-signed one made at start)")
		fs.StringVar(&o.ProxyTLSKeyFile, "proxy-tls-key-file", o.ProxyTLSKeyFile, "private key of --proxy-tls-cert-file")
		fs.StringVar(&o.ProxyClientCAFile, "proxy-client-ca-file", o.ProxyClientCAFile, "CA bundle of client certificates the proxy accepts as identities (empty: bearer tokens only)")
		fs.DurationVar(&o.ProxyRequestTimeout, "proxy-request-timeout", o.ProxyRequestTimeout, "bound of each proxied request to a member cluster, except watches")
		o.ProxyLimits.addFlags(fs)
		fs.StringVar(&o.ProxyServiceAccountIdentity, "proxy-service-account-identity", o.ProxyServiceAccountIdentity, "who a caller that is a ServiceAccount of the control plane is in member clusters: passthrough (the member's ServiceAccount of the same namespace and name, with its groups, as with Karmada's proxy), deny (refused, 403, whatever reaches a member) or map (the user karmadaflow:serviceaccount:<namespace>:<name>, without ServiceAccount groups, whom member RBAC must grant explicitly)")
		fs.BoolVar(&o.ServeSearchAPI, "serve-search-api", o.ServeSearchAPI, "serve the proxy as the search.karmada.io API server behind karmada-apiserver's aggregator (APIService v1alpha1.search.karmada.io), ResourceRegistries kept in etcd, as karmada-search does; needs --enable-proxy and --search-etcd-servers")
		fs.Func("search-etcd-servers", "comma-separated etcd URLs keeping the search API's ResourceRegistries", func(v string) error {
			o.SearchEtcdServers = nil
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					o.SearchEtcdServers = append(o.SearchEtcdServers, s)
				}
			}
			return nil
		})
		fs.StringVar(&o.SearchEtcdPrefix, "search-etcd-prefix", o.SearchEtcdPrefix, "etcd key prefix of the search API's storage (karmada-search's default: /registry)")
		fs.StringVar(&o.SearchEtcdCAFile, "search-etcd-cafile", o.SearchEtcdCAFile, "CA bundle verifying the etcd servers")
		fs.StringVar(&o.SearchEtcdCert, "search-etcd-certfile", o.SearchEtcdCert, "client certificate for etcd")
		fs.StringVar(&o.SearchEtcdKey, "search-etcd-keyfile", o.SearchEtcdKey, "private key of --search-etcd-certfile")
		pa := &o.ProxyAuth
		fs.Float64Var(&pa.QPS, "proxy-auth-qps", pa.QPS, "TokenReviews and SubjectAccessReviews per second the proxy sends the control plane, on a client of their own (not --kube-api-qps's)")
		fs.IntVar(&pa.Burst, "proxy-auth-burst", pa.Burst, "burst of the proxy's TokenReviews and SubjectAccessReviews")
		fs.IntVar(&pa.MaxInFlight, "proxy-auth-max-in-flight", pa.MaxInFlight, "TokenReviews, and apart from them SubjectAccessReviews, the proxy has in flight at once (and as many TokenReviews again for tokens authenticated within the last hour); a caller needing one more is answered 429 with Retry-After at once")
		fs.DurationVar(&pa.CacheTTL, "proxy-auth-cache-ttl", pa.CacheTTL, "how long the proxy remembers a token's user and an allowing SubjectAccessReview")
		fs.DurationVar(&pa.FailureCacheTTL, "proxy-auth-failure-cache-ttl", pa.FailureCacheTTL, "how long the proxy remembers a token the control plane did not authenticate, and a denying SubjectAccessReview")
		fs.StringVar(&o.CRDTarballURL, "crd-tarball-url", o.CRDTarballURL, "CRD tarball of new Karmada control planes whose Karmada names none, {{.Version}} standing for their Karmada version (empty: https://github.com/karmada-io/karmada/releases/download/{{.Version}}/crds.tar.gz, as karmada-operator)")
		fs.StringVar(&o.CRDTarballCAFile, "crd-tarball-ca-file", o.CRDTarballCAFile, "CA bundle that verifies the server of --crd-tarball-url (empty: the system's roots)")
		fs.StringVar(&o.CRDTarballTokenSecret, "crd-tarball-token-secret", o.CRDTarballTokenSecret, "<namespace>/<name> of a Secret of the host cluster whose key token is sent to --crd-tarball-url as a bearer token")
		fs.Func("crd-tarball-allowed-url-prefixes", "comma-separated URL prefixes under which alone a Karmada's spec.crdTarball URL, and each redirect on the way, may lead, compared by scheme, host and port, and by path on a segment boundary (unset: https://github.com/karmada-io/karmada/releases/download/, the GitHub hosts its downloads redirect to, and the directory of --crd-tarball-url; empty: none)",
			commaList(&o.CRDTarballAllowedURLPrefixes))
		fs.Func("crd-tarball-allowed-proxy-urls", "comma-separated proxies (scheme://host[:port]) a Karmada's spec.crdTarball may download through (empty: none)",
			commaList(&o.CRDTarballAllowedProxyURLs))
		fs.Float64Var(&o.ActivitiesPerSecond, "activities-per-second", o.ActivitiesPerSecond, "activities started per second on the task queue, across all workers (0: unlimited)")
	case Starter:
		fs.IntVar(&o.TriggerWorkers, "trigger-workers", o.TriggerWorkers, "goroutines per watched resource that signal workflows")
		fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "informer resync period")
		fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "how often each member cluster's health is probed")
		fs.DurationVar(&o.ClusterFailureThreshold, "cluster-failure-threshold", o.ClusterFailureThreshold, "how long a cluster's probes must fail before it is marked not Ready (a success marks it Ready at once)")
		fs.StringVar(&o.ProvisioningSelector, "provisioning-selector", o.ProvisioningSelector, "label selector of the Karmada objects to provision (empty: all); the others are left to karmada-operator")
		fs.DurationVar(&o.EnsurePeriod, "ensure-period", o.EnsurePeriod, "how often every owned object is checked to have a running workflow (one visibility query per workflow type); missing ones are started")
		le := &o.LeaderElection
		fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "elect a leader on a Lease of the host cluster; only the leader signals and starts workflows (run two replicas with it)")
		fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long a standby waits after the leader's last renewal before it takes over")
		fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader retries renewing its Lease before it steps down (and exits)")
		fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "how long candidates wait between attempts to acquire or renew the Lease")
		fs.StringVar(&le.ResourceName, "leader-elect-resource-name", le.ResourceName, "name of the Lease")
		fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", le.ResourceNamespace, "namespace of the Lease in the host cluster (empty: the namespace of the starter's pod)")
	}
}

// Parse returns the options of component from the environment (read with getenv) and args
// (without the program name), validated.
func Parse(component Component, args []string, getenv func(string) string) (*Options, error) {
	o := Default(component)
	fs := flag.NewFlagSet(string(component), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)

	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if value := getenv(name); value != "" {
			if err := fs.Set(f.Name, value); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Added after the environment is read: --version has no environment variable.
	printVersion := fs.Bool(versionFlag, false, versionUsage)
	if err := fs.Parse(args); err != nil {
		return nil, err // flag.ErrHelp for -h and --help
	}
	if *printVersion {
		return nil, ErrVersion
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// commaList sets *list to a flag's comma-separated items: an empty value sets it empty, not
// nil, so that "--flag=" can differ from the flag unset.
func commaList(list *[]string) func(string) error {
	return func(v string) error {
		*list = []string{}
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*list = append(*list, item)
			}
		}
		return nil
	}
}

// ErrVersion is Parse's answer to --version.
var ErrVersion = errors.New("version requested")

const (
	versionFlag  = "version"
	versionUsage = "print the version and commit, and exit"
)

// FromCommandLine parses args (the process's, after the program name and any subcommand)
// and the environment. It prints the usage and exits 0 for --help, prints the version and
// exits 0 for --version, and prints the problem and exits 2 for invalid options.
func FromCommandLine(component Component, args []string) *Options {
	o, err := Parse(component, args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Print(Usage(component))
		os.Exit(0)
	}
	if errors.Is(err, ErrVersion) {
		fmt.Println(version.String(string(component)))
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n(--help lists the flags)\n", component, err)
		os.Exit(2)
	}
	return o
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Usage describes the flags of component and their environment variables.
func Usage(component Component) string {
	fs := flag.NewFlagSet(string(component), flag.ContinueOnError)
	Default(component).AddFlags(fs)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of %s (every flag can be set as the environment variable shown):\n", component)
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "  --%s (%s)\n    \t%s (default %q)\n", f.Name, EnvName(f.Name), f.Usage, f.DefValue)
	})
	fmt.Fprintf(&b, "  --%s\n    \t%s\n", versionFlag, versionUsage)
	return b.String()
}
