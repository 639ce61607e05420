package env

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

const temporalTimeout = 3 * time.Minute

// SearchAttributes are the custom Keyword search attributes the dev server registers.
var SearchAttributes = []string{"KarmadaKind", "KarmadaNamespace", "KarmadaName", "KarmadaCluster", "ReconcilePhase"}

// Temporal describes the environment's Temporal dev server.
type Temporal struct {
	Address   string `json:"address"`          // frontend host:port
	UIURL     string `json:"uiURL"`            // Web UI
	Namespace string `json:"namespace"`        // always "default"
	DBFile    string `json:"dbFile,omitempty"` // SQLite file; empty when in memory
}

type temporalPorts struct{ frontend, ui, http, metrics int }

// startTemporal starts the dev server, closes frontendUp once the frontend serves (all its
// ports are bound then) and returns once the UI serves too.
func (e *Env) startTemporal(ctx context.Context, ports temporalPorts, frontendUp chan<- struct{}) error {
	e.Temporal = Temporal{
		Address:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.frontend)),
		UIURL:     "http://127.0.0.1:" + strconv.Itoa(ports.ui),
		Namespace: "default",
		DBFile:    e.opts.TemporalDBFile,
	}
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
	p, err := e.startProcess("temporal-server", binTemporal, args, e.Dir, tierComponent,
		ports.frontend, ports.ui, ports.http, ports.metrics)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.temporal = p
	e.mu.Unlock()
	if err := waitFor(ctx, temporalTimeout, "Temporal frontend at "+e.Temporal.Address, e.checkTemporalFrontend, p); err != nil {
		return err
	}
	close(frontendUp)
	return waitFor(ctx, temporalTimeout, "Temporal UI at "+e.Temporal.UIURL, e.checkTemporalUI, p)
}

// RestartTemporal stops the Temporal dev server and starts it again on the same ports with the
// same flags (so with the same search attributes), returning once it serves again. In memory
// (no TemporalDBFile), every workflow is gone afterwards, as after the loss of Temporal's
// database; workers and starters keep running and reconnect.
func (e *Env) RestartTemporal(ctx context.Context) error {
	if err := e.StopTemporal(); err != nil {
		return err
	}
	return e.StartTemporal(ctx)
}

// StopTemporal stops the Temporal dev server (SIGTERM, then SIGKILL); StartTemporal starts it
// again. Between the two, Temporal is down.
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

// StartTemporal starts the dev server StopTemporal stopped, on the same ports with the same
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
	if err := waitFor(ctx, temporalTimeout, "Temporal frontend at "+e.Temporal.Address, e.checkTemporalFrontend, p); err != nil {
		return err
	}
	if err := waitFor(ctx, temporalTimeout, "Temporal UI at "+e.Temporal.UIURL, e.checkTemporalUI, p); err != nil {
		return err
	}
	e.phase("temporal restarted", begin)
	return nil
}

// checkTemporalFrontend succeeds once the frontend is healthy, serves the namespace and knows
// the custom search attributes.
func (e *Env) checkTemporalFrontend(ctx context.Context) error {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  e.Temporal.Address,
		Namespace: e.Temporal.Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
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
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %s", url, resp.Status)
	}
	return nil
}
