package env

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"k8s.io/client-go/rest"
)

const temporalTimeout = 3 * time.Minute

// SearchAttributes are the custom Keyword search attributes the dev server registers.
var SearchAttributes = []string{"KarmadaKind", "KarmadaNamespace", "KarmadaName", "KarmadaCluster", "ReconcilePhase"}

// Temporal backends of Options.TemporalBackend.
const (
	// TemporalDev is the CLI's dev server: one process, one history shard, in memory or in a
	// SQLite file, no TLS.
	TemporalDev = "dev"
	// TemporalPostgres is the Temporal server as in production: PostgreSQL, several history
	// shards, mTLS on the frontend, the Web UI server beside it.
	TemporalPostgres = "postgres"
	// TemporalBackendVariable is the environment variable with which `make` runs an
	// end-to-end package on another backend than the dev server.
	TemporalBackendVariable = "KARMADAFLOW_TEST_TEMPORAL"
)

// Temporal describes the environment's Temporal frontend and how clients reach it.
type Temporal struct {
	Backend   string `json:"backend"`          // TemporalDev or TemporalPostgres
	Address   string `json:"address"`          // frontend host:port
	UIURL     string `json:"uiURL"`            // Web UI
	Namespace string `json:"namespace"`        // always "default"
	DBFile    string `json:"dbFile,omitempty"` // SQLite file of the dev server; empty when in memory
	// Client TLS material; empty for the dev server. With CAFile set, clients verify the
	// frontend's certificate against it for ServerName and present CertFile and KeyFile.
	CAFile     string `json:"caFile,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// ClientOptions are the options of a Go SDK client of the environment's namespace, with the
// client certificate when the frontend requires mTLS.
func (t Temporal) ClientOptions() (client.Options, error) {
	opts := client.Options{HostPort: t.Address, Namespace: t.Namespace}
	if t.CAFile == "" {
		return opts, nil
	}
	tlsConfig, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{
		CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName,
	}})
	if err != nil {
		return client.Options{}, fmt.Errorf("Temporal client TLS: %w", err)
	}
	opts.ConnectionOptions.TLS = tlsConfig
	return opts, nil
}

// Dial connects a client that logs nothing.
func (t Temporal) Dial(ctx context.Context) (client.Client, error) {
	opts, err := t.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	return client.DialContext(ctx, opts)
}

// CLIFlags are the flags of the temporal CLI that reach this server and namespace.
func (t Temporal) CLIFlags() []string {
	flags := []string{"--address", t.Address, "--namespace", t.Namespace}
	if t.CAFile != "" {
		flags = append(flags, "--tls-ca-path", t.CAFile, "--tls-cert-path", t.CertFile, "--tls-key-path", t.KeyFile,
			"--tls-server-name", t.ServerName)
	}
	return flags
}

// ServiceFlags are the flags of karmadaflow's worker and starter that reach this server and
// namespace.
func (t Temporal) ServiceFlags() []string {
	flags := []string{"--temporal-address", t.Address, "--temporal-namespace", t.Namespace}
	if t.CAFile != "" {
		flags = append(flags, "--temporal-tls-ca-file", t.CAFile, "--temporal-tls-cert-file", t.CertFile,
			"--temporal-tls-key-file", t.KeyFile, "--temporal-tls-server-name", t.ServerName)
	}
	return flags
}

// dialTemporal connects a client that logs nothing, for the environment's own checks.
func (e *Env) dialTemporal(ctx context.Context) (client.Client, error) { return e.Temporal.Dial(ctx) }

type temporalPorts struct{ frontend, ui, http, metrics int }

// devServerStarts is how often startDevServer starts the dev server when it exits for a port
// it took twice.
const devServerStarts = 3

// startTemporal starts the Temporal backend, closes frontendUp once the ports the backend
// picks itself are bound and returns once its frontend and UI serve.
func (e *Env) startTemporal(ctx context.Context, ports temporalPorts, sp serverPorts, frontendUp chan<- struct{}) error {
	e.Temporal = Temporal{
		Backend:   e.opts.TemporalBackend,
		Address:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.frontend)),
		UIURL:     "http://127.0.0.1:" + strconv.Itoa(ports.ui),
		Namespace: "default",
		DBFile:    e.opts.TemporalDBFile,
	}
	if e.opts.TemporalBackend == TemporalPostgres {
		close(frontendUp) // the server binds only the ports it is given
		return e.startTemporalServer(ctx, ports, sp)
	}
	return e.startDevServer(ctx, ports, frontendUp)
}

// startDevServer starts the dev server, closes frontendUp once the frontend serves (all its
// ports are bound then) and returns once the UI serves too.
func (e *Env) startDevServer(ctx context.Context, ports temporalPorts, frontendUp chan<- struct{}) error {
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports.frontend),
		"--ui-ip", "127.0.0.1",
		"--ui-port", strconv.Itoa(ports.ui),
		"--http-port", strconv.Itoa(ports.http),
		"--metrics-port", strconv.Itoa(ports.metrics),
		"--log-level", "warn",
	}
	for _, name := range SearchAttributes {
		args = append(args, "--search-attribute", name+"=Keyword")
	}
	if e.opts.TemporalDBFile != "" {
		args = append(args, "--db-filename", e.opts.TemporalDBFile,
			"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal")
	}
	// The dev server picks free ports of its own for its internal services when it starts, and
	// may pick one of those it is given but has not bound yet: it then exits with "address
	// already in use". Its next start picks others.
	var p *process
	for attempt := 1; ; attempt++ {
		var err error
		p, err = e.launchTemporal(ctx, binTemporal, args, e.Dir, ports.frontend, ports.ui, ports.http, ports.metrics)
		if err == nil {
			break
		}
		if attempt == devServerStarts || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		e.logf("env: the Temporal dev server took a port twice (start %d of %d); starting it again", attempt, devServerStarts)
	}
	close(frontendUp)
	return waitFor(ctx, temporalTimeout, "Temporal UI at "+e.Temporal.UIURL, e.checkTemporalUI, p)
}

// launchTemporal starts the Temporal process (the one StopTemporal and StartTemporal stop and
// start) and waits until its frontend serves.
func (e *Env) launchTemporal(ctx context.Context, bin string, args []string, workDir string, ports ...int) (*process, error) {
	p, err := e.startProcess("temporal-server", bin, args, workDir, tierComponent, ports...)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.temporal = p
	e.mu.Unlock()
	return p, e.waitTemporalFrontend(ctx, p)
}

// RestartTemporal stops the Temporal dev server and starts it again on the same ports with the
// same flags (so with the same search attributes), returning once it serves again. In memory
// (no TemporalDBFile), every workflow is gone afterwards, as after the loss of Temporal's
// database; workers and starters keep running and reconnect. With the postgres backend only
// the server process restarts: PostgreSQL and the UI keep running, and so every workflow stays.
func (e *Env) RestartTemporal(ctx context.Context) error {
	if err := e.StopTemporal(); err != nil {
		return err
	}
	return e.StartTemporal(ctx)
}

// StopTemporal stops the Temporal dev server or server (SIGTERM, then SIGKILL); StartTemporal
// starts it again. Between the two, Temporal is down.
func (e *Env) StopTemporal() error {
	e.mu.Lock()
	p := e.temporal
	e.mu.Unlock()
	if err := p.stop(stopGrace); err != nil {
		return err
	}
	e.logf("env: stopped Temporal")
	return nil
}

// KillTemporal kills the Temporal dev server or server with SIGKILL, as a crash would;
// StartTemporal starts it again.
func (e *Env) KillTemporal() error {
	e.mu.Lock()
	p := e.temporal
	e.mu.Unlock()
	if err := p.stop(0); err != nil {
		return err
	}
	e.logf("env: killed Temporal")
	return nil
}

// StartTemporal starts the server StopTemporal or KillTemporal stopped, on the same ports with the same
// flags, and waits until its frontend and UI serve. It does nothing if the server is running.
func (e *Env) StartTemporal(ctx context.Context) error {
	e.mu.Lock()
	old := e.temporal
	e.mu.Unlock()
	if !old.exited() {
		return nil
	}
	begin := time.Now()
	p, err := old.restart()
	if err != nil {
		return err
	}
	e.track(p)
	e.mu.Lock()
	e.temporal = p
	e.mu.Unlock()
	if err := e.waitTemporalFrontend(ctx, p); err != nil {
		return err
	}
	if err := waitFor(ctx, temporalTimeout, "Temporal UI at "+e.Temporal.UIURL, e.checkTemporalUI, p); err != nil {
		return err
	}
	e.phase("temporal restarted", begin)
	return nil
}

// waitTemporalFrontend waits until the frontend of the Temporal process p serves the namespace
// with the search attributes; the server gets them registered first.
func (e *Env) waitTemporalFrontend(ctx context.Context, p *process) error {
	check := e.checkTemporalFrontend
	if e.Temporal.Backend == TemporalPostgres {
		check = func(ctx context.Context) error {
			if err := e.registerTemporalNamespace(ctx); err != nil {
				return err
			}
			return e.checkTemporalFrontend(ctx)
		}
	}
	return waitFor(ctx, temporalTimeout, "Temporal frontend at "+e.Temporal.Address, check, p)
}

// checkTemporalFrontend succeeds once the frontend is healthy, serves the namespace and knows
// the custom search attributes.
func (e *Env) checkTemporalFrontend(ctx context.Context) error {
	c, err := e.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: e.Temporal.Namespace}); err != nil {
		return err
	}
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: e.Temporal.Namespace})
	if err != nil {
		return err
	}
	for _, name := range SearchAttributes {
		if _, ok := attrs.GetCustomAttributes()[name]; !ok {
			return fmt.Errorf("search attribute %s not registered", name)
		}
	}
	return nil
}

func (e *Env) checkTemporalUI(ctx context.Context) error {
	return httpOK(ctx, e.Temporal.UIURL+"/")
}

// httpOK succeeds if a plain HTTP GET of url answers 200.
func httpOK(ctx context.Context, url string) error { return getOK(ctx, http.DefaultClient, url) }

// getOK succeeds if a GET of url with client answers 200.
func getOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %s", url, resp.Status)
	}
	return nil
}
