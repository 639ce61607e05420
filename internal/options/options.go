package options

import (
	"runtime"
	"time"
)

// The options and their defaults: one struct configures the worker or the starter.

// Component is the process the options configure.
type Component string

// The two processes of karmadaflow.
const (
	Worker  Component = "worker"
	Starter Component = "starter"
)

// WorkflowTasksPerCPU is the default of MaxConcurrentWorkflowTasks per CPU the process may use.
const WorkflowTasksPerCPU = 4

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
	// WorkflowTaskTimeout bounds each workflow task: the starter starts runs with it and the
	// worker continues runs as new with it. A task held by a worker that crashed goes to
	// another worker after it.
	WorkflowTaskTimeout time.Duration

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
	MaxConcurrentActivities      int // 0: the SDK default
	MaxConcurrentLocalActivities int // local activities run at once; bounds the load on the API servers
	// MaxConcurrentWorkflowTasks bounds the workflow tasks run at once. A task waits for its
	// local activities, so more tasks than the CPUs serve only make each one longer: past the
	// heartbeat point (80% of the workflow task timeout) the SDK heartbeats the task, which
	// costs a round trip and three history events. The default, WorkflowTasksPerCPU per CPU,
	// kept 500 cold-start reconciles within their tasks on 2 cores (docs/benchmarks.md).
	MaxConcurrentWorkflowTasks int
	ActivitiesPerSecond        float64 // per task queue, across all workers; 0: unlimited
	// WorkerVersioning registers the worker as a version of the Worker Deployment
	// WorkerDeployment (Temporal's Worker Versioning), its build ID from the version stamp:
	// every run is pinned to the version that started it and moves to the current version
	// when it continues as new.
	WorkerVersioning bool
	WorkerDeployment string
	// PromoteVersion makes the worker's version the deployment's current one once it polls,
	// when it is newer than the last change of the current version (a rollout); a rollback is
	// an explicit set-current-version.
	PromoteVersion bool
	// StrandedAfter is how long a run may stay pinned to a version other than the current one
	// before the current version's workers take it as stranded (workerdeployment.Rescuer).
	StrandedAfter time.Duration

	// Starter only.
	TriggerWorkers int // goroutines per trigger that send signals
	// ClusterChangeSignalsPerSecond bounds the signals one Cluster change fans out to the
	// MultiClusterServices that involve it, across all Clusters: a flapping member then
	// queues behind the other changes instead of crowding them out.
	ClusterChangeSignalsPerSecond float64
	ResyncPeriod                  time.Duration // informer resync (resyncs of unchanged objects send no signal)
	// EnsurePeriod is how often the starter checks that every object it owns has a running
	// workflow, and starts those that have none.
	EnsurePeriod time.Duration
	// LeaderElection: only the replica holding the Lease signals and starts workflows.
	LeaderElection LeaderElection

	// Standalone mode: karmadaflow applies Works to members and keeps Clusters' Ready
	// condition itself. Switch each off beside a real karmada-controller-manager.
	EnableWorkExecution bool
	EnableClusterHealth bool
	// ClusterUnhealthyGrace is how long a provider may be not Ready before its EndpointSlices
	// are withdrawn from consumers (worker).
	ClusterUnhealthyGrace time.Duration
	// ClusterProbeInterval is how often each member cluster's health is probed (starter; and
	// a Pull cluster's agent, which renews its Lease as often).
	ClusterProbeInterval time.Duration
	// ClusterFailureThreshold is how long a cluster's probes must fail before it is marked not
	// Ready, like Karmada's --cluster-failure-threshold (starter; and a Pull cluster's agent).
	ClusterFailureThreshold time.Duration
	// PullClusterLeaseGrace is how long a Pull cluster's agent may leave its Lease unrenewed
	// before the cluster is marked not Ready (worker).
	PullClusterLeaseGrace time.Duration

	// Cluster, when set, runs the worker as the agent of that Pull cluster, inside it: the host
	// cluster is the member, the agent's controllers apply the Works of its execution
	// namespace, collect its EndpointSlices and keep its health; it makes no Temporal
	// connection.
	Cluster string

	// Global resource proxy (worker): served when EnableProxy, over TLS with the certificate
	// of ProxyTLSCertFile, or, only when ProxySelfSignedCertificate asks for it (local
	// development), a self-signed one made at start that no caller can verify.
	EnableProxy                bool
	ProxyBindAddress           string
	ProxyTLSCertFile           string
	ProxyTLSKeyFile            string
	ProxySelfSignedCertificate bool
	ProxyClientCAFile          string        // CA of client certificates accepted as identities; empty: tokens only
	ProxyRequestTimeout        time.Duration // bounds each request to a member, except watches
	// ProxyLimits bound request bodies, member answers held in memory and requests in flight.
	ProxyLimits ProxyLimits
	// ProxyServiceAccountIdentity is who a control-plane ServiceAccount caller is in members:
	// passthrough, deny or map (proxy.ServiceAccountIdentity).
	ProxyServiceAccountIdentity string
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
	// ProxyAuth bounds the TokenReviews and SubjectAccessReviews the proxy makes for its callers.
	ProxyAuth ProxyAuth

	// EnableProvisioning installs a Karmada control plane for every Karmada object of the host
	// cluster (which then needs the Karmada CRD).
	EnableProvisioning bool
	// ProvisioningSelector limits provisioning to the Karmada objects it matches (a label
	// selector; empty: all), so that karmada-operator keeps the others (starter).
	ProvisioningSelector string
	// ProvisioningNamespaces are the only namespaces whose Karmadas the worker provisions:
	// those where the chart grants it the rights to (provisioning.namespaces). A Karmada of
	// another namespace is refused with a ValidationError before anything is written. nil
	// (the flag unset): every namespace, as far as the worker's rights go (worker).
	ProvisioningNamespaces []string
	// CRDTarballURL is the CRD tarball installed into new control planes whose Karmada names
	// none, "{{.Version}}" standing for their Karmada version; empty: Karmada's release, as
	// karmada-operator downloads it. An offline installation points it at a mirror (worker).
	CRDTarballURL string
	// CRDTarballCAFile is a PEM bundle that alone verifies CRDTarballURL's server (worker).
	CRDTarballCAFile string
	// CRDTarballTokenSecret ("<namespace>/<name>") is a Secret of the host cluster whose key
	// token is sent to CRDTarballURL as a bearer token (worker).
	CRDTarballTokenSecret string
	// CRDTarballAllowedURLPrefixes are the only URLs a Karmada's spec.crdTarball may make the
	// worker fetch (and its redirects lead to): URL prefixes, compared by scheme, host and port
	// and by path on a segment boundary. nil (the flag unset): Karmada's release downloads and
	// the directory of CRDTarballURL; empty: none (worker).
	CRDTarballAllowedURLPrefixes []string
	// CRDTarballAllowedProxyURLs are the proxies (scheme://host[:port]) a Karmada's
	// spec.crdTarball may name; none by default (worker).
	CRDTarballAllowedProxyURLs []string
	// HostAccessNamespaces are the namespaces whose Karmadas may ask for pods that reach their
	// node (hostPath volumes, privileged sidecars, added capabilities, host ports...); none by
	// default (worker).
	HostAccessNamespaces []string

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

// ProxyAuth bounds the reviews by which the proxy (worker) identifies its callers in the
// control plane: they go through a client of their own, so that a flood of bad tokens never
// queues the requests of the control plane's other clients.
type ProxyAuth struct {
	QPS             float64       // reviews per second, on the reviews' own client
	Burst           int           // burst of reviews
	MaxInFlight     int           // TokenReviews, and apart from them SubjectAccessReviews, in flight; beyond: 429
	CacheTTL        time.Duration // how long a token's user, and an allowing review, are remembered
	FailureCacheTTL time.Duration // how long a token not authenticated, and a denying review, are remembered
	SourceQPS       float64       // tokens not known good looked at per second from one address; beyond: 429
	SourceBurst     int           // burst of SourceQPS
}

// Default returns the options of component before flags and environment are applied.
func Default(component Component) *Options {
	o := &Options{
		Component:                     component,
		TemporalAddress:               "127.0.0.1:7233",
		TemporalNamespace:             "default",
		TaskQueue:                     "karmadaflow",
		KubeAPIQPS:                    50,
		KubeAPIBurst:                  100,
		MetricsBindAddress:            "127.0.0.1:9090",
		LogLevel:                      "info",
		LogFormat:                     LogFormatJSON,
		ShutdownTimeout:               30 * time.Second,
		TriggerWorkers:                4,
		ClusterChangeSignalsPerSecond: 200,
		MaxConcurrentLocalActivities:  64,
		MaxConcurrentWorkflowTasks:    WorkflowTasksPerCPU * runtime.GOMAXPROCS(0),
		ResyncPeriod:                  10 * time.Minute,
		EnsurePeriod:                  time.Minute,
		WorkflowTaskTimeout:           2 * time.Second,
		NamespaceRetention:            72 * time.Hour,
		StickyScheduleToStartTimeout:  time.Second,
		WorkerVersioning:              true,
		WorkerDeployment:              "karmadaflow",
		PromoteVersion:                true,
		StrandedAfter:                 10 * time.Minute,
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

		ProxyBindAddress:    "127.0.0.1:10443",
		ProxyRequestTimeout: 30 * time.Second,
		ProxyLimits:         defaultProxyLimits(),
		// Karmada's proxy passes callers through as they are, and member RBAC written for it
		// (subjects of kind ServiceAccount) keeps working.
		ProxyServiceAccountIdentity: "passthrough",
		SearchEtcdPrefix:            "/registry",
		ClusterProbeInterval:        10 * time.Second,

		ClusterFailureThreshold: 30 * time.Second,
		PullClusterLeaseGrace:   40 * time.Second,

		ProxyAuth: ProxyAuth{QPS: 20, Burst: 40, MaxInFlight: 8, CacheTTL: 10 * time.Second, FailureCacheTTL: 10 * time.Second,
			SourceQPS: 10, SourceBurst: 20},
	}
	if component == Starter {
		o.MetricsBindAddress = "127.0.0.1:9091"
	}
	return o
}
