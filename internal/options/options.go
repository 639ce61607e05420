// Package options owns the command-line flags and environment variables of the worker and the
// starter: one struct with the defaults, the parsing and the validation, so both processes are
// configured the same way. Every flag can also be set through an environment variable named
// KARMADAFLOW_ followed by the flag name in upper case with '-' turned into '_'
// (--temporal-address is KARMADAFLOW_TEMPORAL_ADDRESS); a flag on the command line wins.
package options

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/karmadaflow/karmadaflow/internal/version"
)

// Component is the process the options configure.
type Component string

// The two processes of karmadaflow.
const (
	Worker  Component = "worker"
	Starter Component = "starter"
)

// EnvPrefix starts the name of the environment variable of every flag.
const EnvPrefix = "KARMADAFLOW_"

// Log formats.
const (
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// Options configures the worker or the starter.
type Options struct {
	Component Component

	// Temporal.
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	// TemporalTLS secures the connection: the server is verified against TemporalTLSCAFile
	// (empty: the system's roots) under TemporalTLSServerName (empty: the address's host).
	// It is on when any TLS file, the server name or an API key is given.
	TemporalTLS           bool
	TemporalTLSCAFile     string
	TemporalTLSCertFile   string // client certificate for mutual TLS, with TemporalTLSKeyFile
	TemporalTLSKeyFile    string
	TemporalTLSServerName string
	// WorkflowIDPrefix starts the ID of every workflow the starter starts or signals, so that
	// installations with their own task queues can share one namespace.
	WorkflowIDPrefix string
	// TemporalAPIKeyFile holds an API key (Temporal Cloud), read again when the file changes.
	TemporalAPIKeyFile string

	// Kubernetes. An empty kubeconfig path means the in-cluster configuration.
	KarmadaKubeconfig string // the Karmada control plane
	HostKubeconfig    string // the cluster karmadaflow (and Karmada instances) run in
	KubeAPIQPS        float64
	KubeAPIBurst      int

	// Observability.
	MetricsBindAddress string // /metrics, /healthz and /readyz
	LogLevel           string
	LogFormat          string

	// ShutdownTimeout bounds the graceful shutdown after SIGINT/SIGTERM (in the worker: how
	// long running activities may take to finish).
	ShutdownTimeout time.Duration

	// Worker only.
	// NamespaceRetention is the retention of closed workflows of the namespace `worker
	// bootstrap` registers.
	NamespaceRetention time.Duration
	// StickyScheduleToStartTimeout is how long a workflow task waits for the worker that has
	// the workflow cached before any worker may take it: the delay after a worker crash.
	StickyScheduleToStartTimeout time.Duration
	MaxConcurrentActivities      int     // 0: the SDK default
	MaxConcurrentLocalActivities int     // local activities run at once; bounds the load on the API servers
	MaxConcurrentWorkflowTasks   int     // workflow tasks run at once; keeps each one short under load
	ActivitiesPerSecond          float64 // per task queue, across all workers; 0: unlimited

	// Starter only.
	TriggerWorkers int           // goroutines per trigger that send signals
	ResyncPeriod   time.Duration // informer resync (resyncs of unchanged objects send no signal)
	// EnsurePeriod is how often the starter checks that every object it owns has a running
	// workflow, and starts those that have none.
	EnsurePeriod time.Duration
	// WorkflowTaskTimeout bounds each workflow task of the runs the starter starts: a task held
	// by a worker that crashed goes to another worker after it.
	WorkflowTaskTimeout time.Duration
	// LeaderElection: only the replica holding the Lease signals and starts workflows.
	LeaderElection LeaderElection

	// Standalone mode: karmadaflow applies Works to members and keeps Clusters' Ready
	// condition itself. Switch each off beside a real karmada-controller-manager.
	EnableWorkExecution bool
	EnableClusterHealth bool
	// ClusterUnhealthyGrace is how long a provider may be not Ready before its EndpointSlices
	// are withdrawn from consumers (worker).
	ClusterUnhealthyGrace time.Duration
	// ClusterProbeInterval is how often each member cluster's health is probed (starter).
	ClusterProbeInterval time.Duration
	// ClusterFailureThreshold is how long a cluster's probes must fail before it is marked not
	// Ready, like Karmada's --cluster-failure-threshold (starter).
	ClusterFailureThreshold time.Duration

	// Global resource proxy (worker): served when EnableProxy, over TLS. Without a certificate
	// file the proxy serves a self-signed certificate made at start.
	EnableProxy         bool
	ProxyBindAddress    string
	ProxyTLSCertFile    string
	ProxyTLSKeyFile     string
	ProxyClientCAFile   string        // CA of client certificates accepted as identities; empty: tokens only
	ProxyRequestTimeout time.Duration // bounds each request to a member, except watches
	// ServeSearchAPI serves the proxy as the search.karmada.io API server, to be registered
	// behind karmada-apiserver (APIService v1alpha1.search.karmada.io) as karmada-search is:
	// callers are authenticated and authorized by the control plane (front-proxy headers,
	// tokens, client certificates) and ResourceRegistries are kept in etcd.
	ServeSearchAPI    bool
	SearchEtcdServers []string
	SearchEtcdPrefix  string
	SearchEtcdCAFile  string
	SearchEtcdCert    string
	SearchEtcdKey     string

	// EnableProvisioning installs a Karmada control plane for every Karmada object of the host
	// cluster (which then needs the Karmada CRD).
	EnableProvisioning bool
	// ProvisioningSelector limits provisioning to the Karmada objects it matches (a label
	// selector; empty: all), so that karmada-operator keeps the others (starter).
	ProvisioningSelector string
	// CRDTarballURL is the CRD tarball installed into new control planes whose Karmada names
	// none, "{{.Version}}" standing for their Karmada version; empty: Karmada's release, as
	// karmada-operator downloads it. An offline installation points it at a mirror (worker).
	CRDTarballURL string
	// CRDTarballCAFile is a PEM bundle that alone verifies CRDTarballURL's server (worker).
	CRDTarballCAFile string
	// CRDTarballTokenSecret ("<namespace>/<name>") is a Secret of the host cluster whose key
	// token is sent to CRDTarballURL as a bearer token (worker).
	CRDTarballTokenSecret string

	// Capability flags go here, with their defaults in Default, their flags in AddFlags and
	// their checks in Validate.
}

// LeaderElection configures the starter's leader election on a Lease of the host cluster
// (client-go's leaderelection; the durations mean what they mean there).
type LeaderElection struct {
	Enabled           bool
	LeaseDuration     time.Duration // how long a standby waits before taking over a silent leader's Lease
	RenewDeadline     time.Duration // how long the leader keeps trying to renew before it gives up
	RetryPeriod       time.Duration // between attempts to acquire or renew
	ResourceName      string        // the Lease
	ResourceNamespace string        // empty: the namespace the starter's pod runs in
}

// Default returns the options of component before flags and environment are applied.
func Default(component Component) *Options {
	o := &Options{
		Component:                    component,
		TemporalAddress:              "127.0.0.1:7233",
		TemporalNamespace:            "default",
		TaskQueue:                    "karmadaflow",
		KubeAPIQPS:                   50,
		KubeAPIBurst:                 100,
		MetricsBindAddress:           "127.0.0.1:9090",
		LogLevel:                     "info",
		LogFormat:                    LogFormatJSON,
		ShutdownTimeout:              30 * time.Second,
		TriggerWorkers:               4,
		MaxConcurrentLocalActivities: 64,
		MaxConcurrentWorkflowTasks:   32,
		ResyncPeriod:                 10 * time.Minute,
		EnsurePeriod:                 time.Minute,
		WorkflowTaskTimeout:          2 * time.Second,
		NamespaceRetention:           72 * time.Hour,
		StickyScheduleToStartTimeout: time.Second,
		LeaderElection: LeaderElection{
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
			ResourceName:  "karmadaflow-starter",
		},

		EnableWorkExecution:   true,
		EnableClusterHealth:   true,
		EnableProvisioning:    true,
		ClusterUnhealthyGrace: time.Minute,

		ProxyBindAddress:     "127.0.0.1:10443",
		ProxyRequestTimeout:  30 * time.Second,
		SearchEtcdPrefix:     "/registry",
		ClusterProbeInterval: 10 * time.Second,

		ClusterFailureThreshold: 30 * time.Second,
	}
	if component == Starter {
		o.MetricsBindAddress = "127.0.0.1:9091"
	}
	return o
}

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

	switch o.Component {
	case Worker:
		fs.DurationVar(&o.NamespaceRetention, "temporal-namespace-retention", o.NamespaceRetention, "retention of closed workflows in the namespace `worker bootstrap` registers (when missing)")
		fs.DurationVar(&o.ClusterUnhealthyGrace, "cluster-unhealthy-grace", o.ClusterUnhealthyGrace, "how long a provider cluster may be not Ready before its EndpointSlices are withdrawn from consumers")
		fs.DurationVar(&o.StickyScheduleToStartTimeout, "sticky-schedule-to-start-timeout", o.StickyScheduleToStartTimeout, "how long a workflow task waits for the worker that has the workflow cached before any worker takes it (the delay after a worker crash)")
		fs.IntVar(&o.MaxConcurrentActivities, "max-concurrent-activities", o.MaxConcurrentActivities, "activities this worker runs at once (0: SDK default)")
		fs.IntVar(&o.MaxConcurrentWorkflowTasks, "max-concurrent-workflow-tasks", o.MaxConcurrentWorkflowTasks, "workflow tasks this worker runs at once; a task waits for its local activities, so more than the local activities can serve only makes each task longer")
		fs.IntVar(&o.MaxConcurrentLocalActivities, "max-concurrent-local-activities", o.MaxConcurrentLocalActivities, "local activities (short API calls of the reconcile loops) this worker runs at once; more queue in the worker instead of overloading the API servers")
		fs.BoolVar(&o.EnableProxy, "enable-proxy", o.EnableProxy, "serve the global resource proxy")
		fs.StringVar(&o.ProxyBindAddress, "proxy-bind-address", o.ProxyBindAddress, "host:port the global resource proxy listens on")
		fs.StringVar(&o.ProxyTLSCertFile, "proxy-tls-cert-file", o.ProxyTLSCertFile, "serving certificate of the proxy (empty: a self-signed one made at start)")
		fs.StringVar(&o.ProxyTLSKeyFile, "proxy-tls-key-file", o.ProxyTLSKeyFile, "private key of --proxy-tls-cert-file")
		fs.StringVar(&o.ProxyClientCAFile, "proxy-client-ca-file", o.ProxyClientCAFile, "CA bundle of client certificates the proxy accepts as identities (empty: bearer tokens only)")
		fs.DurationVar(&o.ProxyRequestTimeout, "proxy-request-timeout", o.ProxyRequestTimeout, "bound of each proxied request to a member cluster, except watches")
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
		fs.StringVar(&o.CRDTarballURL, "crd-tarball-url", o.CRDTarballURL, "CRD tarball of new Karmada control planes whose Karmada names none, {{.Version}} standing for their Karmada version (empty: https://github.com/karmada-io/karmada/releases/download/{{.Version}}/crds.tar.gz, as karmada-operator)")
		fs.StringVar(&o.CRDTarballCAFile, "crd-tarball-ca-file", o.CRDTarballCAFile, "CA bundle that verifies the server of --crd-tarball-url (empty: the system's roots)")
		fs.StringVar(&o.CRDTarballTokenSecret, "crd-tarball-token-secret", o.CRDTarballTokenSecret, "<namespace>/<name> of a Secret of the host cluster whose key token is sent to --crd-tarball-url as a bearer token")
		fs.Float64Var(&o.ActivitiesPerSecond, "activities-per-second", o.ActivitiesPerSecond, "activities started per second on the task queue, across all workers (0: unlimited)")
	case Starter:
		fs.IntVar(&o.TriggerWorkers, "trigger-workers", o.TriggerWorkers, "goroutines per watched resource that signal workflows")
		fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "informer resync period")
		fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "how often each member cluster's health is probed")
		fs.DurationVar(&o.WorkflowTaskTimeout, "workflow-task-timeout", o.WorkflowTaskTimeout, "bound of each workflow task of the runs this starts; a task held by a worker that crashed goes to another worker after it")
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

// Validate checks every option and reports all problems at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Component != Worker && o.Component != Starter {
		errs = append(errs, fmt.Errorf("unknown component %q", o.Component))
	}
	if err := validateHostPort(o.TemporalAddress); err != nil {
		errs = append(errs, fmt.Errorf("--temporal-address: %w", err))
	}
	if o.NamespaceRetention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("--temporal-namespace-retention must be at least 24h (Temporal's minimum), got %v", o.NamespaceRetention))
	}
	if o.TemporalNamespace == "" {
		errs = append(errs, errors.New("--temporal-namespace must not be empty"))
	}
	if o.TaskQueue == "" {
		errs = append(errs, errors.New("--task-queue must not be empty"))
	}
	if (o.TemporalTLSCertFile == "") != (o.TemporalTLSKeyFile == "") {
		errs = append(errs, errors.New("--temporal-tls-cert-file and --temporal-tls-key-file go together"))
	}
	if o.KubeAPIQPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be positive, got %d", o.KubeAPIBurst))
	}
	if err := validateHostPort(o.MetricsBindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--metrics-bind-address: %w", err))
	}
	if _, err := zapcore.ParseLevel(o.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if o.LogFormat != LogFormatJSON && o.LogFormat != LogFormatConsole {
		errs = append(errs, fmt.Errorf("--log-format must be %s or %s, got %q", LogFormatJSON, LogFormatConsole, o.LogFormat))
	}
	if o.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must be positive, got %v", o.ShutdownTimeout))
	}
	if o.MaxConcurrentActivities < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-activities must not be negative, got %d", o.MaxConcurrentActivities))
	}
	if o.EnableProxy {
		if err := validateHostPort(o.ProxyBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--proxy-bind-address: %w", err))
		}
		if (o.ProxyTLSCertFile == "") != (o.ProxyTLSKeyFile == "") {
			errs = append(errs, errors.New("--proxy-tls-cert-file and --proxy-tls-key-file go together"))
		}
		if o.ProxyRequestTimeout <= 0 {
			errs = append(errs, fmt.Errorf("--proxy-request-timeout must be positive, got %v", o.ProxyRequestTimeout))
		}
	}
	if o.ServeSearchAPI {
		if !o.EnableProxy {
			errs = append(errs, errors.New("--serve-search-api needs --enable-proxy"))
		}
		if len(o.SearchEtcdServers) == 0 {
			errs = append(errs, errors.New("--serve-search-api needs --search-etcd-servers"))
		}
		if (o.SearchEtcdCert == "") != (o.SearchEtcdKey == "") {
			errs = append(errs, errors.New("--search-etcd-certfile and --search-etcd-keyfile go together"))
		}
	}
	if o.MaxConcurrentWorkflowTasks < 2 {
		errs = append(errs, fmt.Errorf("--max-concurrent-workflow-tasks must be at least 2, got %d", o.MaxConcurrentWorkflowTasks))
	}
	if o.MaxConcurrentLocalActivities <= 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-local-activities must be positive, got %d", o.MaxConcurrentLocalActivities))
	}
	if o.ActivitiesPerSecond < 0 {
		errs = append(errs, fmt.Errorf("--activities-per-second must not be negative, got %v", o.ActivitiesPerSecond))
	}
	if o.ClusterUnhealthyGrace < 0 {
		errs = append(errs, fmt.Errorf("--cluster-unhealthy-grace must not be negative, got %v", o.ClusterUnhealthyGrace))
	}
	if o.ClusterProbeInterval < time.Second {
		errs = append(errs, fmt.Errorf("--cluster-probe-interval must be at least 1s, got %v", o.ClusterProbeInterval))
	}
	if o.ClusterFailureThreshold <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-failure-threshold must be positive, got %v", o.ClusterFailureThreshold))
	}
	if o.TriggerWorkers <= 0 {
		errs = append(errs, fmt.Errorf("--trigger-workers must be positive, got %d", o.TriggerWorkers))
	}
	if o.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--resync-period must not be negative, got %v", o.ResyncPeriod))
	}
	if o.WorkflowTaskTimeout < time.Second {
		errs = append(errs, fmt.Errorf("--workflow-task-timeout must be at least 1s, got %v", o.WorkflowTaskTimeout))
	}
	if o.StickyScheduleToStartTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--sticky-schedule-to-start-timeout must be at least 100ms, got %v", o.StickyScheduleToStartTimeout))
	}
	if o.ProvisioningSelector != "" {
		if _, err := labels.Parse(o.ProvisioningSelector); err != nil {
			errs = append(errs, fmt.Errorf("--provisioning-selector: %w", err))
		}
		if !o.EnableProvisioning {
			errs = append(errs, errors.New("--provisioning-selector needs --enable-provisioning"))
		}
	}
	if err := validateCRDTarballURL(o.CRDTarballURL); err != nil {
		errs = append(errs, fmt.Errorf("--crd-tarball-url: %w", err))
	}
	if o.CRDTarballTokenSecret != "" {
		if namespace, name, _ := strings.Cut(o.CRDTarballTokenSecret, "/"); namespace == "" || name == "" || strings.Contains(name, "/") {
			errs = append(errs, fmt.Errorf("--crd-tarball-token-secret must be <namespace>/<name>, got %q", o.CRDTarballTokenSecret))
		}
	}
	if o.EnsurePeriod <= 0 {
		errs = append(errs, fmt.Errorf("--ensure-period must be positive, got %v", o.EnsurePeriod))
	}
	if le := o.LeaderElection; le.Enabled {
		// client-go's own rules, reported with the flags' names.
		jittered := time.Duration(leaderelection.JitterFactor * float64(le.RetryPeriod))
		if le.RetryPeriod <= 0 || le.RenewDeadline <= jittered || le.LeaseDuration <= le.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election needs 0 < %v x --leader-elect-retry-period (%v) < --leader-elect-renew-deadline (%v) < --leader-elect-lease-duration (%v)",
				leaderelection.JitterFactor, le.RetryPeriod, le.RenewDeadline, le.LeaseDuration))
		}
		if le.ResourceName == "" {
			errs = append(errs, errors.New("--leader-elect-resource-name must not be empty"))
		}
	}
	return errors.Join(errs...)
}

// validateCRDTarballURL checks that u, with a version in place of {{.Version}} (the
// placeholder of provisioning.CRDTarballVersion), is an http or https URL.
func validateCRDTarballURL(u string) error {
	if u == "" {
		return nil
	}
	parsed, err := url.Parse(strings.ReplaceAll(u, "{{.Version}}", "v0.0.0"))
	if err != nil {
		return err
	}
	if (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", u)
	}
	return nil
}

func validateHostPort(address string) error {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if port == "" {
		return fmt.Errorf("%q has no port", address)
	}
	return nil
}
