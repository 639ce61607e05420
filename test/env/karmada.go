package env

// Beside a real Karmada (Options.BesideKarmada), the control plane is a Karmada control plane
// run by Karmada's own components, as upstream deploys them, and karmadaflow runs beside them:
//   - Karmada's whole CRD set from its CRD tarball (the bases and the patches, as
//     karmada-operator applies them), instead of the project's deploy/crds;
//   - karmada-aggregated-apiserver serving cluster.karmada.io/v1alpha1 behind an APIService,
//     on the shared etcd under an --etcd-prefix of its own;
//   - karmada-webhook and the mutating and validating webhook configurations upstream
//     registers, and the conversion webhook of the binding CRDs;
//   - karmada-controller-manager (Options.KarmadaControllers) and karmada-scheduler.
//
// Members join in Push mode as `karmadactl join` joins them, and Karmada's cluster status
// controller, not the environment, marks each Cluster Ready. Every server listens on
// 127.0.0.1; the API server reaches the webhook and the aggregated API server there, and
// verifies them against a CA of the environment's (<dir>/karmada-components/ca.crt).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// DefaultKarmadaControllers is karmada-controller-manager's --controllers beside karmadaflow:
// every controller but those karmadaflow's MultiClusterService workflows replace.
const DefaultKarmadaControllers = "*,-multiclusterservice,-endpointsliceCollect,-endpointsliceDispatch"

// Karmada's binaries, built from its source into BinDir.
const (
	binKarmadaAggregated = "karmada-aggregated-apiserver"
	binKarmadaWebhook    = "karmada-webhook"
	binKarmadaCM         = "karmada-controller-manager"
	binKarmadaScheduler  = "karmada-scheduler"
)

var karmadaBinaries = []string{binKarmadaAggregated, binKarmadaWebhook, binKarmadaCM, binKarmadaScheduler}

const (
	// karmadaSystemNamespace holds the aggregated API server's Service, as upstream's.
	karmadaSystemNamespace = "karmada-system"
	// aggregatedEtcdPrefix keeps the aggregated API server's Clusters apart from the control
	// plane's own keys (/karmada) in the etcd every cluster shares.
	aggregatedEtcdPrefix = "/karmada-aggregated-apiserver"
	// karmadaReadyTimeout bounds each wait for a Karmada component or a Cluster.
	karmadaReadyTimeout = 2 * time.Minute
	// karmadaLogLevel is the --v of every component: upstream's chart default.
	karmadaLogLevel = "2"
)

// Karmada's cluster health timings: so that an unreachable member turns NotReady within
// seconds (upstream: status every 10s, 30s of failures), as karmadaflow's own cluster health
// does in the tests. Push-mode Clusters have no lease, so the monitor's grace periods only
// matter for a status controller that stops posting.
var karmadaClusterHealthFlags = []string{
	"--cluster-status-update-frequency=2s",
	"--cluster-failure-threshold=5s",
	"--cluster-success-threshold=2s",
	"--cluster-monitor-period=2s",
	"--cluster-monitor-grace-period=10s",
	"--cluster-startup-grace-period=20s",
}

// karmadaComponents are Karmada's components of the control plane and what they share.
type karmadaComponents struct {
	dir   string // certificates and the components' working directory
	caPEM []byte // the CA of the webhook's and the aggregated API server's serving certificates

	// Loopback ports: the aggregated API server's and the webhook's secure ports, and the
	// health ports of the controller manager and the scheduler.
	aggregatedPort, webhookPort, controllerManagerPort, schedulerPort int

	client *http.Client // verifies the components' CA
	procs  []*process   // every component started, watched while waiting

	agents map[string]*karmadaAgent // by member, under Env.mu: see karmadaagent.go
}

func (k *karmadaComponents) file(name string) string { return filepath.Join(k.dir, name) }

// webhookCertDir holds tls.crt and tls.key, the names karmada-webhook reads from --cert-dir.
func (k *karmadaComponents) webhookCertDir() string { return k.file("webhook-certs") }

// webhookURL is the loopback base URL the control plane calls karmada-webhook at.
func (k *karmadaComponents) webhookURL() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.webhookPort))
}

// prepareKarmada reserves the components' ports and writes their CA and serving certificates.
func (e *Env) prepareKarmada() error {
	ports, err := e.ports.reserve(4)
	if err != nil {
		return err
	}
	k := &karmadaComponents{dir: filepath.Join(e.Dir, "karmada-components"),
		aggregatedPort: ports[0], webhookPort: ports[1], controllerManagerPort: ports[2], schedulerPort: ports[3]}
	if err := os.MkdirAll(k.webhookCertDir(), 0o700); err != nil {
		return err
	}
	ca, err := pki.NewAuthority("karmada-components-ca")
	if err != nil {
		return err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	// The aggregator verifies the name of the APIService's Service, <service>.<namespace>.svc.
	aggregated, err := ca.Issue(pki.LeafSpec{CommonName: binKarmadaAggregated, Server: true, IPs: loopback,
		DNSNames: []string{"localhost", binKarmadaAggregated + "." + karmadaSystemNamespace + ".svc"}}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	// Webhook configurations name the webhook by URL, https://127.0.0.1:<port>.
	webhook, err := ca.Issue(pki.LeafSpec{CommonName: binKarmadaWebhook, Server: true, IPs: loopback, DNSNames: []string{"localhost"}},
		pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	k.caPEM = ca.Pair().Cert
	files := map[string][]byte{
		k.file("ca.crt"):                             k.caPEM,
		k.file("aggregated-apiserver.crt"):           aggregated.Cert,
		k.file("aggregated-apiserver.key"):           aggregated.Key,
		filepath.Join(k.webhookCertDir(), "tls.crt"): webhook.Cert,
		filepath.Join(k.webhookCertDir(), "tls.key"): webhook.Key,
		filepath.Join(k.webhookCertDir(), "ca.crt"):  k.caPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(k.caPEM)
	k.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	e.karmada = k
	return nil
}

// startKarmada makes the running control plane API server a Karmada control plane: Karmada's
// CRDs, then the aggregated API server and the webhook (which need only the CRDs) and their
// registrations, then the controller manager and the scheduler (which need the Cluster API
// and the webhooks). It returns once every component answers.
func (e *Env) startKarmada(ctx context.Context) error {
	begin := time.Now()
	k := e.karmada
	for _, ns := range []string{karmadaSystemNamespace, ClusterSecretNamespace} {
		if err := createNamespace(ctx, e.ControlPlane.Client(), ns); err != nil {
			return fmt.Errorf("cluster %s: %w", e.ControlPlane.Name, err)
		}
	}
	if err := e.installKarmadaCRDs(ctx); err != nil {
		return err
	}
	e.phase("karmada CRDs established", begin)

	aggregated, err := e.startKarmadaComponent(binKarmadaAggregated, k.aggregatedArgs(e.ControlPlane.Kubeconfig, e.ControlPlane.file("ca.crt"), e.etcdURL), k.aggregatedPort)
	if err != nil {
		return err
	}
	webhook, err := e.startKarmadaComponent(binKarmadaWebhook, k.webhookArgs(e.ControlPlane.Kubeconfig), k.webhookPort)
	if err != nil {
		return err
	}
	if err := e.registerClusterAPI(ctx, aggregated); err != nil {
		return err
	}
	e.phase("karmada cluster API available", begin)
	if err := waitFor(ctx, karmadaReadyTimeout, "readiness of "+binKarmadaWebhook, func(ctx context.Context) error {
		return k.get(ctx, k.webhookURL()+"/readyz/")
	}, webhook); err != nil {
		return err
	}
	if err := e.registerWebhooks(ctx); err != nil {
		return err
	}
	e.phase("karmada webhooks registered", begin)

	for _, c := range []struct {
		bin  string
		args []string
		port int
	}{
		{binKarmadaCM, k.controllerManagerArgs(e.ControlPlane.Kubeconfig, e.opts.KarmadaControllers), k.controllerManagerPort},
		{binKarmadaScheduler, k.schedulerArgs(e.ControlPlane.Kubeconfig), k.schedulerPort},
	} {
		p, err := e.startKarmadaComponent(c.bin, c.args, c.port)
		if err != nil {
			return err
		}
		if err := k.waitHealthy(ctx, c.bin, c.port, p); err != nil {
			return err
		}
	}
	e.phase("karmada components ready", begin)
	return nil
}

// startKarmadaComponent starts one of Karmada's binaries, its log in logs/<binary>.log.
func (e *Env) startKarmadaComponent(bin string, args []string, port int) (*process, error) {
	p, err := e.startProcess(bin, bin, args, e.karmada.dir, tierComponent, port)
	if err != nil {
		return nil, err
	}
	e.karmada.procs = append(e.karmada.procs, p)
	return p, nil
}

// get answers nil when url answers 200, verifying the components' CA over HTTPS.
func (k *karmadaComponents) get(ctx context.Context, url string) error {
	return getOK(ctx, k.client, url)
}

// waitHealthy waits until the component p (name, for errors) answers /healthz on port.
func (k *karmadaComponents) waitHealthy(ctx context.Context, name string, port int, p *process) error {
	healthz := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz"
	return waitFor(ctx, karmadaReadyTimeout, "/healthz of "+name, func(ctx context.Context) error {
		return k.get(ctx, healthz)
	}, p)
}

// aggregatedArgs are upstream's flags of karmada-aggregated-apiserver, on loopback and the
// shared etcd. It authenticates and authorizes callers through the control plane (the
// front-proxy CA and the request headers it reads from kube-system's
// extension-apiserver-authentication ConfigMap). That ConfigMap has no client CA (the control
// plane authenticates by token), so clientCA, the control plane's CA as upstream's
// karmada-apiserver's --client-ca-file, is given instead of being looked for there in vain.
func (k *karmadaComponents) aggregatedArgs(kubeconfig, clientCA, etcdURL string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--client-ca-file=" + clientCA,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--etcd-servers=" + etcdURL,
		"--etcd-prefix=" + aggregatedEtcdPrefix,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(k.aggregatedPort),
		"--tls-cert-file=" + k.file("aggregated-apiserver.crt"),
		"--tls-private-key-file=" + k.file("aggregated-apiserver.key"),
		"--tls-min-version=VersionTLS13",
		"--v=" + karmadaLogLevel,
	}
}

// webhookArgs are upstream's flags of karmada-webhook, on loopback. Its readiness is served on
// the secure port (/readyz/), so the health probe server and metrics are off.
func (k *karmadaComponents) webhookArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(k.webhookPort),
		"--cert-dir=" + k.webhookCertDir(),
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--v=" + karmadaLogLevel,
	}
}

// controllerManagerArgs are upstream's flags of karmada-controller-manager with the given
// controllers and short cluster health timings. One replica needs no leader election (a lease
// would only hold a restarted one back).
func (k *karmadaComponents) controllerManagerArgs(kubeconfig, controllers string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.controllerManagerPort)),
		"--v=" + karmadaLogLevel,
	}, karmadaClusterHealthFlags...)
}

// schedulerArgs are upstream's flags of karmada-scheduler, without the scheduler estimator
// (off by default upstream too), health and metrics on one loopback port.
func (k *karmadaComponents) schedulerArgs(kubeconfig string) []string {
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(k.schedulerPort))
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--metrics-bind-address=" + address,
		"--health-probe-bind-address=" + address,
		"--v=" + karmadaLogLevel,
	}
}
