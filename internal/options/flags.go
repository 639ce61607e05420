package options

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/karmadaflow/karmadaflow/internal/version"
)

// The command line and the environment: the flags registered, parsed together with their
// environment variables, and described.

// AddFlags registers the flags of o's component on fs, with o's current values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	sections := o.flagSections()
	for _, name := range sections.Order {
		fs.AddFlagSet(sections.FlagSets[name])
	}
}

// flagSections returns the flags of o's component, with o's current values as defaults, in the
// sections --help shows them in, as Kubernetes components do; each section holds the
// component's flags only.
func (o *Options) flagSections() cliflag.NamedFlagSets {
	var sections cliflag.NamedFlagSets
	// Asked for in the order --help prints them.
	temporal := sections.FlagSet("temporal")
	kube := sections.FlagSet("kubernetes")
	observability := sections.FlagSet("observability")
	capabilities := sections.FlagSet("capabilities")

	temporal.StringVar(&o.TemporalAddress, "temporal-address", o.TemporalAddress, "host:port of the Temporal frontend")
	temporal.StringVar(&o.TemporalNamespace, "temporal-namespace", o.TemporalNamespace, "Temporal namespace")
	temporal.StringVar(&o.TaskQueue, "task-queue", o.TaskQueue, "base of the Temporal task queues: <base>-mcs, <base>-cluster and <base>-provisioning, one per capability")
	temporal.BoolVar(&o.TemporalTLS, "temporal-tls", o.TemporalTLS, "connect to Temporal over TLS (implied by the other --temporal-tls-* flags and --temporal-api-key-file)")
	temporal.StringVar(&o.TemporalTLSCAFile, "temporal-tls-ca-file", o.TemporalTLSCAFile, "CA bundle that verifies the Temporal frontend (empty: the system's roots)")
	temporal.StringVar(&o.TemporalTLSCertFile, "temporal-tls-cert-file", o.TemporalTLSCertFile, "client certificate for mutual TLS with Temporal")
	temporal.StringVar(&o.TemporalTLSKeyFile, "temporal-tls-key-file", o.TemporalTLSKeyFile, "private key of --temporal-tls-cert-file")
	temporal.StringVar(&o.TemporalTLSServerName, "temporal-tls-server-name", o.TemporalTLSServerName, "name the Temporal frontend's certificate is verified for (empty: the host of --temporal-address)")
	temporal.StringVar(&o.WorkflowIDPrefix, "workflow-id-prefix", o.WorkflowIDPrefix, "prefix of every workflow ID (e.g. \"eu/\"), so that installations with their own --task-queue can share one namespace")
	temporal.StringVar(&o.TemporalAPIKeyFile, "temporal-api-key-file", o.TemporalAPIKeyFile, "file holding a Temporal Cloud API key (read again when it changes)")
	temporal.DurationVar(&o.WorkflowTaskTimeout, "workflow-task-timeout", o.WorkflowTaskTimeout, "bound of each workflow task: the starter starts runs with it and the worker continues runs as new with it (set both alike); a task held by a worker that crashed goes to another worker after it")

	kube.StringVar(&o.KarmadaKubeconfig, "karmada-kubeconfig", o.KarmadaKubeconfig, "kubeconfig of the Karmada control plane (empty: in-cluster config)")
	kube.StringVar(&o.HostKubeconfig, "host-kubeconfig", o.HostKubeconfig, "kubeconfig of the host cluster (empty: in-cluster config)")
	kube.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to each Kubernetes API server")
	kube.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to each Kubernetes API server")

	observability.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "host:port serving /metrics, /healthz and /readyz")
	observability.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: debug, info, warn or error")
	observability.StringVar(&o.LogFormat, "log-format", o.LogFormat, "log format: json or console")

	capabilities.BoolVar(&o.EnableWorkExecution, "enable-work-execution", o.EnableWorkExecution, "apply Works to member clusters (standalone mode; off beside karmada-controller-manager)")
	capabilities.BoolVar(&o.EnableProvisioning, "enable-provisioning", o.EnableProvisioning, "install a Karmada control plane for every Karmada object of the host cluster (needs the Karmada CRD there)")
	capabilities.BoolVar(&o.EnableClusterHealth, "enable-cluster-health", o.EnableClusterHealth, "probe member clusters and keep their Ready condition (standalone mode; off beside karmada-controller-manager)")

	switch o.Component {
	case Worker:
		o.addWorkerFlags(&sections, temporal)
	case Starter:
		o.addStarterFlags(&sections)
	}

	// Last, as Kubernetes components print theirs; --help and --version join it in Usage.
	sections.FlagSet("global").DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long a graceful shutdown may take")
	return sections
}

// addWorkerFlags registers the worker's own flags: in temporal, and in sections of their own.
func (o *Options) addWorkerFlags(sections *cliflag.NamedFlagSets, temporal *pflag.FlagSet) {
	temporal.DurationVar(&o.NamespaceRetention, "temporal-namespace-retention", o.NamespaceRetention, "retention of closed workflows in the namespace \"worker bootstrap\" registers (when missing)")

	fs := sections.FlagSet("worker")
	fs.StringVar(&o.Cluster, "cluster", o.Cluster, "run as the agent of this Pull member cluster, inside it: --host-kubeconfig (empty: in-cluster config) is the member, --karmada-kubeconfig the control plane as the agent's ServiceAccount there; it applies the Works of karmada-es-<name>, collects the member's EndpointSlices into Works there and keeps its Cluster's health and Lease, and makes no Temporal connection (the --temporal-* flags and --task-queue are ignored)")
	fs.DurationVar(&o.PullClusterLeaseGrace, "pull-cluster-lease-grace", o.PullClusterLeaseGrace, "how long the agent of a Pull cluster may leave its Lease (karmada-es-<name>/karmadaflow-agent) unrenewed before the cluster is marked not Ready (Karmada's --cluster-monitor-grace-period)")
	fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "with --cluster: how often the agent probes its member and renews its Lease")
	fs.DurationVar(&o.ClusterFailureThreshold, "cluster-failure-threshold", o.ClusterFailureThreshold, "with --cluster: how long the agent's probes of its member must fail before it marks the cluster not Ready")
	fs.DurationVar(&o.ClusterUnhealthyGrace, "cluster-unhealthy-grace", o.ClusterUnhealthyGrace, "how long a provider cluster may be not Ready before its EndpointSlices are withdrawn from consumers")
	fs.DurationVar(&o.StickyScheduleToStartTimeout, "sticky-schedule-to-start-timeout", o.StickyScheduleToStartTimeout, "how long a workflow task waits for the worker that has the workflow cached before any worker takes it (the delay after a worker crash)")
	fs.IntVar(&o.MaxConcurrentActivities, "max-concurrent-activities", o.MaxConcurrentActivities, "activities this worker runs at once (0: SDK default)")
	fs.IntVar(&o.MaxConcurrentWorkflowTasks, "max-concurrent-workflow-tasks", o.MaxConcurrentWorkflowTasks, "workflow tasks this worker runs at once (default: 4 per CPU); a task waits for its local activities, so more tasks than the CPUs serve only make each one longer, until the SDK heartbeats it")
	fs.IntVar(&o.MaxConcurrentLocalActivities, "max-concurrent-local-activities", o.MaxConcurrentLocalActivities, "local activities (short API calls of the reconcile loops) this worker runs at once; more queue in the worker instead of overloading the API servers")
	fs.BoolVar(&o.WorkerVersioning, "worker-versioning", o.WorkerVersioning, "register as a version of the Worker Deployment --worker-deployment, named by the build's version stamp: each run is pinned to the version that started it and moves to the current version when it continues as new (docs/temporal-in-production.md: Upgrades)")
	fs.StringVar(&o.WorkerDeployment, "worker-deployment", o.WorkerDeployment, "name of the Temporal Worker Deployment the worker's version belongs to")
	fs.BoolVar(&o.PromoteVersion, "promote-version", o.PromoteVersion, "once polling, make this worker's version the deployment's current version when it was created after the current version last changed (a new release); never for an older one, so a rollback stays an explicit set-current-version")
	fs.DurationVar(&o.StrandedAfter, "stranded-after", o.StrandedAfter, "while this worker's version is current, a run still pinned to another version this long after the workers of that version should have woken it is stranded (they are gone): one on an older version is moved to the current one, one on a newer version is counted in karmadaflow_worker_stranded_runs (0: neither)")
	fs.Float64Var(&o.ActivitiesPerSecond, "activities-per-second", o.ActivitiesPerSecond, "activities started per second on each task queue, across all workers (0: unlimited)")

	fs = sections.FlagSet("proxy")
	fs.BoolVar(&o.EnableProxy, "enable-proxy", o.EnableProxy, "serve the global resource proxy")
	fs.StringVar(&o.ProxyBindAddress, "proxy-bind-address", o.ProxyBindAddress, "host:port the global resource proxy listens on")
	fs.StringVar(&o.ProxyTLSCertFile, "proxy-tls-cert-file", o.ProxyTLSCertFile, "serving certificate of the proxy, which its callers verify before they send their tokens (required, unless --proxy-self-signed-certificate)")
	fs.StringVar(&o.ProxyTLSKeyFile, "proxy-tls-key-file", o.ProxyTLSKeyFile, "private key of --proxy-tls-cert-file")
	fs.BoolVar(&o.ProxySelfSignedCertificate, "proxy-self-signed-certificate", o.ProxySelfSignedCertificate, "for local development only: serve a self-signed certificate made at start, which no caller can verify (kubectl then needs --insecure-skip-tls-verify and sends its token to whoever answers)")
	fs.StringVar(&o.ProxyClientCAFile, "proxy-client-ca-file", o.ProxyClientCAFile, "CA bundle of client certificates the proxy accepts as identities (empty: bearer tokens only)")
	fs.DurationVar(&o.ProxyRequestTimeout, "proxy-request-timeout", o.ProxyRequestTimeout, "bound of each proxied request to a member cluster, except watches")
	o.ProxyLimits.addFlags(fs)
	fs.StringVar(&o.ProxyServiceAccountIdentity, "proxy-service-account-identity", o.ProxyServiceAccountIdentity, "who a caller that is a ServiceAccount of the control plane is in member clusters: passthrough (the member's ServiceAccount of the same namespace and name, with its groups, as with Karmada's proxy), deny (refused, 403, whatever reaches a member) or map (the user karmadaflow:serviceaccount:<namespace>:<name>, without ServiceAccount groups, whom member RBAC must grant explicitly)")
	pa := &o.ProxyAuth
	fs.Float64Var(&pa.QPS, "proxy-auth-qps", pa.QPS, "TokenReviews and SubjectAccessReviews per second the proxy sends the control plane, on a client of their own (not --kube-api-qps's)")
	fs.IntVar(&pa.Burst, "proxy-auth-burst", pa.Burst, "burst of the proxy's TokenReviews and SubjectAccessReviews")
	fs.IntVar(&pa.MaxInFlight, "proxy-auth-max-in-flight", pa.MaxInFlight, "TokenReviews, and apart from them SubjectAccessReviews, the proxy has in flight at once (and as many TokenReviews again for tokens authenticated within the last hour); a caller needing one more is answered 429 with Retry-After at once")
	fs.DurationVar(&pa.CacheTTL, "proxy-auth-cache-ttl", pa.CacheTTL, "how long the proxy remembers a token's user and an allowing SubjectAccessReview")
	fs.DurationVar(&pa.FailureCacheTTL, "proxy-auth-failure-cache-ttl", pa.FailureCacheTTL, "how long the proxy remembers a token the control plane did not authenticate, and a denying SubjectAccessReview")
	fs.Float64Var(&pa.SourceQPS, "proxy-auth-source-qps", pa.SourceQPS, "bearer tokens the proxy does not know good (not authenticated within the last hour) it looks at per second from one address, each counted once while its answer is remembered; beyond it such a request is answered 429 with Retry-After before any TokenReview, so that a flood of random tokens from one address spends its own budget and not the review slots of new callers elsewhere")
	fs.IntVar(&pa.SourceBurst, "proxy-auth-source-burst", pa.SourceBurst, "burst of --proxy-auth-source-qps")

	fs = sections.FlagSet("search API")
	fs.BoolVar(&o.ServeSearchAPI, "serve-search-api", o.ServeSearchAPI, "serve the proxy as the search.karmada.io API server behind karmada-apiserver's aggregator (APIService v1alpha1.search.karmada.io), ResourceRegistries kept in etcd, as karmada-search does; needs --enable-proxy and --search-etcd-servers")
	fs.Func("search-etcd-servers", "comma-separated etcd `URLs` keeping the search API's ResourceRegistries", func(v string) error {
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

	fs = sections.FlagSet("provisioning")
	fs.Func("provisioning-namespaces", "comma-separated `namespaces` whose Karmadas alone are provisioned, those where the worker's RBAC lets it write (the chart's provisioning.namespaces); a Karmada of another is refused with Ready=False/ValidationError (unset: every namespace; empty: none)",
		commaList(&o.ProvisioningNamespaces))
	fs.StringVar(&o.CRDTarballURL, "crd-tarball-url", o.CRDTarballURL, "CRD tarball of new Karmada control planes whose Karmada names none, {{.Version}} standing for their Karmada version (empty: https://github.com/karmada-io/karmada/releases/download/{{.Version}}/crds.tar.gz, as karmada-operator)")
	fs.StringVar(&o.CRDTarballCAFile, "crd-tarball-ca-file", o.CRDTarballCAFile, "CA bundle that verifies the server of --crd-tarball-url (empty: the system's roots)")
	fs.StringVar(&o.CRDTarballTokenSecret, "crd-tarball-token-secret", o.CRDTarballTokenSecret, "<namespace>/<name> of a Secret of the host cluster whose key token is sent to --crd-tarball-url as a bearer token")
	fs.Func("crd-tarball-allowed-url-prefixes", "comma-separated URL `prefixes` under which alone a Karmada's spec.crdTarball URL, and each redirect on the way, may lead, compared by scheme, host and port, and by path on a segment boundary (unset: https://github.com/karmada-io/karmada/releases/download/, the GitHub hosts its downloads redirect to, and the directory of --crd-tarball-url; empty: none)",
		commaList(&o.CRDTarballAllowedURLPrefixes))
	fs.Func("crd-tarball-allowed-proxy-urls", "comma-separated `proxies` (scheme://host[:port]) a Karmada's spec.crdTarball may download through (empty: none)",
		commaList(&o.CRDTarballAllowedProxyURLs))
	fs.Func("host-access-namespaces", "comma-separated `namespaces` whose Karmadas may ask for pods that reach their node: hostPath volumes (a local etcd's volumeData.hostPath too) and volumes the node mounts itself, sidecars that are privileged, escalate privileges, add capabilities, bind host ports or lift seccomp, AppArmor or SELinux confinement (empty: none)",
		commaList(&o.HostAccessNamespaces))
}

// addStarterFlags registers the starter's own flags, in sections of their own.
func (o *Options) addStarterFlags(sections *cliflag.NamedFlagSets) {
	fs := sections.FlagSet("starter")
	fs.IntVar(&o.TriggerWorkers, "trigger-workers", o.TriggerWorkers, "goroutines per watched resource that signal workflows")
	fs.Float64Var(&o.ClusterChangeSignalsPerSecond, "cluster-change-signals-per-second", o.ClusterChangeSignalsPerSecond, "signals per second, across all Clusters, that tell MultiClusterServices a Cluster they involve changed (a member's Ready flip reaches each of them)")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "informer resync period")
	fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "how often each member cluster's health is probed")
	fs.DurationVar(&o.ClusterFailureThreshold, "cluster-failure-threshold", o.ClusterFailureThreshold, "how long a cluster's probes must fail before it is marked not Ready (a success marks it Ready at once)")
	fs.DurationVar(&o.EnsurePeriod, "ensure-period", o.EnsurePeriod, "how often every owned object is checked to have a running workflow (one visibility query per workflow type); missing ones are started")

	sections.FlagSet("provisioning").StringVar(&o.ProvisioningSelector, "provisioning-selector", o.ProvisioningSelector, "label selector of the Karmada objects to provision (empty: all); the others are left to karmada-operator")

	fs = sections.FlagSet("leader election")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "elect a leader on a Lease of the host cluster; only the leader signals and starts workflows (run two replicas with it)")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long a standby waits after the leader's last renewal before it takes over")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader retries renewing its Lease before it steps down (and exits)")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "how long candidates wait between attempts to acquire or renew the Lease")
	fs.StringVar(&le.ResourceName, "leader-elect-resource-name", le.ResourceName, "name of the Lease")
	fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", le.ResourceNamespace, "namespace of the Lease in the host cluster (empty: the namespace of the starter's pod)")
}

// Parse returns the options of component from the environment (read with getenv) and args
// (without the program name), validated.
func Parse(component Component, args []string, getenv func(string) string) (*Options, error) {
	o := Default(component)
	fs := pflag.NewFlagSet(string(component), pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned; FromCommandLine prints it
	o.AddFlags(fs)

	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
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
		return nil, singleDashError(err) // pflag.ErrHelp for -h and --help
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

// singleDashError explains pflag's error for a long flag given with one dash, as the standard
// library's flag package accepted them: pflag reads "-temporal-address" as the shorthands
// t, e, m..., and karmadaflow has none, so its "unknown shorthand flag: 't'" would puzzle.
func singleDashError(err error) error {
	var notExist *pflag.NotExistError
	if !errors.As(err, &notExist) {
		return err
	}
	name, _, _ := strings.Cut(notExist.GetSpecifiedShortnames(), "=")
	if len(name) < 2 {
		return err // -x: a shorthand indeed
	}
	return fmt.Errorf("flag -%s: long flags take two dashes (--%s)", name, name)
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
// and the environment. It prints the usage of command (the program, or the program and its
// subcommand: "worker versions") and exits 0 for --help, prints the version and exits 0 for
// --version, and prints the problem and exits 2 for invalid options.
func FromCommandLine(component Component, command string, args []string) *Options {
	o, err := Parse(component, args, os.Getenv)
	if errors.Is(err, pflag.ErrHelp) {
		// Wrapped to the terminal as Kubernetes components do, and not at all into a pipe,
		// so that grep finds a flag with its description.
		cols, _, sizeErr := term.GetSize(int(os.Stdout.Fd()))
		if sizeErr != nil {
			cols = 0
		}
		fmt.Print(usage(component, command, cols))
		os.Exit(0)
	}
	if errors.Is(err, ErrVersion) {
		fmt.Println(version.String(string(component)))
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n(--help lists the flags)\n", command, err)
		os.Exit(2)
	}
	return o
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Usage describes the flags of component, in sections, and their environment variables.
func Usage(component Component) string { return usage(component, string(component), 0) }

// usage is Usage under the name command, with descriptions wrapped to cols columns (0: not
// wrapped).
func usage(component Component, command string, cols int) string {
	sections := Default(component).flagSections()
	for _, fs := range sections.FlagSets {
		fs.VisitAll(func(f *pflag.Flag) { f.Usage += fmt.Sprintf(" (env %s)", EnvName(f.Name)) })
	}
	// Neither has an environment variable: Parse adds --version after reading the
	// environment, and pflag answers -h and --help itself.
	global := sections.FlagSet("global")
	global.Bool(versionFlag, false, versionUsage)
	global.BoolP("help", "h", false, "print this help, and exit")

	var b strings.Builder
	fmt.Fprintf(&b, "Usage of %s.\nEvery flag but --help and --version can also be set as the environment variable shown;\nthe command line wins over the environment.\n", command)
	cliflag.PrintSections(&b, sections, cols)
	return b.String()
}
