package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"text/template"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// The Temporal backend runs the Temporal server as in production instead of the CLI's dev
// server: its own PostgreSQL (initdb in Dir, on a loopback port), the schema set up by
// temporal-sql-tool, temporalServerShards history shards, mTLS on the frontend, the Web UI
// server pointed at it, and the namespace and search attributes registered through its API.

const (
	binTemporalServer  = "temporal-server"
	binTemporalSQLTool = "temporal-sql-tool"
	binTemporalUI      = "temporal-ui-server"
)

// temporalServerShards is the server's number of history shards; the dev server has one.
const temporalServerShards = 4

// temporalServerName is the name the frontend's certificate is verified against.
const temporalServerName = "localhost"

// temporalDatabases are the server's two SQL databases and the schemas embedded in
// temporal-sql-tool (the versioned files of go.temporal.io/server's schema directory).
var temporalDatabases = []struct{ name, schema string }{
	{"temporal", "postgresql/v12/temporal"},
	{"temporal_visibility", "postgresql/v12/visibility"},
}

// serverPorts are the ports the Temporal server binds beyond the dev server's.
type serverPorts struct {
	postgres                             int
	frontendMembership                   int
	history, historyMembership           int
	matching, matchingMembership         int
	systemWorker, systemWorkerMembership int
}

// serverPortCount is the number of fields of serverPorts.
const serverPortCount = 8

func newServerPorts(p []int) serverPorts {
	return serverPorts{postgres: p[0], frontendMembership: p[1], history: p[2], historyMembership: p[3],
		matching: p[4], matchingMembership: p[5], systemWorker: p[6], systemWorkerMembership: p[7]}
}

// postgresBinDir is the newest PostgreSQL installed from the distribution's packages
// (hack/install-postgresql.sh installs one).
func postgresBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(a) - majorOf(b) })
	for _, dir := range slices.Backward(dirs) {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: PostgreSQL not found under /usr/lib/postgresql (hack/install-postgresql.sh installs it)", ErrToolsMissing)
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// postgresUser is the user PostgreSQL runs as: initdb and postgres refuse root, so as root
// they run as the distribution's postgres user; otherwise as this process's user (nil).
func postgresUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL cannot run as root and there is no postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// startTemporalServer starts PostgreSQL, sets up the schema, starts the server and its UI,
// registers the namespace and the search attributes and returns once all of that serves.
func (e *Env) startTemporalServer(ctx context.Context, ports temporalPorts, sp serverPorts) error {
	dir := filepath.Join(e.Dir, "temporal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := e.writeTemporalTLS(dir); err != nil {
		return err
	}
	password, err := randomToken()
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := e.startPostgres(ctx, dir, sp.postgres, password); err != nil {
		return err
	}
	e.phase("temporal postgres ready", begin)
	begin = time.Now()
	if err := e.setupTemporalSchema(ctx, sp.postgres, password); err != nil {
		return err
	}
	e.phase("temporal schema set up", begin)

	configFile := filepath.Join(dir, "config.yaml")
	if err := writeTemplate(configFile, serverConfig, serverConfigValues{
		Shards: temporalServerShards, Postgres: sp.postgres, Password: password, Dir: dir, ServerName: temporalServerName,
		Metrics: ports.metrics, Frontend: ports.frontend, FrontendHTTP: ports.http, FrontendMembership: sp.frontendMembership,
		History: sp.history, HistoryMembership: sp.historyMembership, Matching: sp.matching, MatchingMembership: sp.matchingMembership,
		SystemWorker: sp.systemWorker, SystemWorkerMembership: sp.systemWorkerMembership,
	}); err != nil {
		return err
	}
	p, err := e.launchTemporal(ctx, binTemporalServer, []string{"--config-file", configFile, "--allow-no-auth", "start"},
		dir, ports.frontend, ports.http, ports.metrics, sp.frontendMembership, sp.history, sp.historyMembership,
		sp.matching, sp.matchingMembership, sp.systemWorker, sp.systemWorkerMembership)
	if err != nil {
		return err
	}

	uiDir := filepath.Join(dir, "ui")
	if err := os.MkdirAll(uiDir, 0o700); err != nil {
		return err
	}
	if err := writeTemplate(filepath.Join(uiDir, "base.yaml"), uiConfig, struct {
		Temporal
		Port int
	}{e.Temporal, ports.ui}); err != nil {
		return err
	}
	ui, err := e.startProcess("temporal-ui", binTemporalUI, []string{"--root", dir, "--config", "ui", "start"}, dir, tierComponent, ports.ui)
	if err != nil {
		return err
	}
	return waitFor(ctx, temporalTimeout, "Temporal UI at "+e.Temporal.UIURL, e.checkTemporalUI, ui, p)
}

// writeTemporalTLS makes a CA, the frontend's serving certificate and the client certificate
// (used by the server's system worker too) and records their files in e.Temporal.
func (e *Env) writeTemporalTLS(dir string) error {
	ca, err := pki.NewAuthority("karmadaflow-temporal-ca")
	if err != nil {
		return err
	}
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "temporal-frontend", DNSNames: []string{temporalServerName},
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	client, err := ca.Issue(pki.LeafSpec{CommonName: "karmadaflow", Client: true}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	e.Temporal.CAFile = filepath.Join(dir, "ca.crt")
	e.Temporal.CertFile = filepath.Join(dir, "client.crt")
	e.Temporal.KeyFile = filepath.Join(dir, "client.key")
	e.Temporal.ServerName = temporalServerName
	files := map[string][]byte{
		e.Temporal.CAFile:                  ca.Pair().Cert,
		e.Temporal.CertFile:                client.Cert,
		e.Temporal.KeyFile:                 client.Key,
		filepath.Join(dir, "frontend.crt"): serving.Cert,
		filepath.Join(dir, "frontend.key"): serving.Key,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startPostgres makes a database cluster in <dir>/postgres with the superuser temporal and
// starts PostgreSQL on 127.0.0.1:port (TCP only, no Unix socket), returning once it accepts
// connections. Its data are throwaway: no fsync.
func (e *Env) startPostgres(ctx context.Context, dir string, port int, password string) error {
	pgBin, err := postgresBinDir()
	if err != nil {
		return err
	}
	cred, err := postgresUser()
	if err != nil {
		return err
	}
	pgDir := filepath.Join(dir, "postgres")
	pwFile := filepath.Join(pgDir, "password")
	if err := os.Mkdir(pgDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		// The postgres user needs to pass through Dir and own its directory.
		for _, d := range []string{e.Dir, dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				return err
			}
		}
		for _, path := range []string{pgDir, pwFile} {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	data := filepath.Join(pgDir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(pgBin, "initdb"), "--pgdata", data, "--username", "temporal",
		"--pwfile", pwFile, "--auth-host", "scram-sha-256", "--auth-local", "peer", "--encoding", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := os.Remove(pwFile); err != nil {
		return err
	}
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "max_connections=200", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
	e.ports.release(port)
	p, err := startProcessAs(cred, "postgres", filepath.Join(pgBin, "postgres"), args, pgDir, filepath.Join(e.Dir, "logs", "postgres.log"), tierStorage)
	if err != nil {
		return err
	}
	e.track(p)
	isReady := filepath.Join(pgBin, "pg_isready")
	return waitFor(ctx, temporalTimeout, "PostgreSQL on port "+strconv.Itoa(port), func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, isReady, "--host", "127.0.0.1", "--port", strconv.Itoa(port)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}, p)
}

// setupTemporalSchema creates the server's databases and brings their schemas to the latest
// version with temporal-sql-tool, both databases at once.
func (e *Env) setupTemporalSchema(ctx context.Context, port int, password string) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, db := range temporalDatabases {
		g.Go(func() error {
			logPath := filepath.Join(e.Dir, "logs", "temporal-sql-tool-"+db.name+".log")
			logFile, err := os.Create(logPath)
			if err != nil {
				return err
			}
			defer logFile.Close()
			for _, step := range [][]string{
				{"create-database"},
				{"setup-schema", "--version", "0.0"},
				{"update-schema", "--schema-name", db.schema},
			} {
				args := append([]string{"--plugin", "postgres12", "--endpoint", "127.0.0.1", "--port", strconv.Itoa(port),
					"--user", "temporal", "--database", db.name}, step...)
				cmd := exec.CommandContext(ctx, filepath.Join(e.opts.BinDir, binTemporalSQLTool), args...)
				cmd.Env = append(os.Environ(), "SQL_PASSWORD="+password)
				cmd.Stdout, cmd.Stderr = logFile, logFile
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("temporal-sql-tool %s of %s: %w\n--- last lines of %s ---\n%s",
						step[0], db.name, err, logPath, tailFile(logPath, 20))
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// registerTemporalNamespace registers the namespace and adds the custom search attributes
// the server lacks; what is registered already stays as it is.
func (e *Env) registerTemporalNamespace(ctx context.Context) error {
	c, err := e.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ns := e.Temporal.Namespace
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %s: %w", ns, err)
	}
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range SearchAttributes {
		if _, ok := attrs.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
	var added *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &added) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

func writeTemplate(path string, t *template.Template, values any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := t.Execute(f, values); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// serverConfigValues fill serverConfig.
type serverConfigValues struct {
	Shards                                     int
	Postgres                                   int
	Password                                   string
	Dir                                        string
	ServerName                                 string
	Metrics                                    int
	Frontend, FrontendHTTP, FrontendMembership int
	History, HistoryMembership                 int
	Matching, MatchingMembership               int
	SystemWorker, SystemWorkerMembership       int
}

// serverConfig is the server's configuration, in the style of the server's
// config/development-postgres12.yaml: every service in one process on 127.0.0.1, mTLS on the
// frontend (its system worker presents the client certificate), plain internode traffic.
var serverConfig = template.Must(template.New("config.yaml").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(`log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: {{.Shards}}
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:{{.Postgres}}"
        connectProtocol: tcp
        user: temporal
        password: {{q .Password}}
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "127.0.0.1:{{.Postgres}}"
        connectProtocol: tcp
        user: temporal
        password: {{q .Password}}
        maxConns: 2
        maxIdleConns: 2
        maxConnLifetime: 1h

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "127.0.0.1:{{.Metrics}}"
  tls:
    frontend:
      server:
        certFile: {{q (print .Dir "/frontend.crt")}}
        keyFile: {{q (print .Dir "/frontend.key")}}
        requireClientAuth: true
        clientCaFiles: [{{q (print .Dir "/ca.crt")}}]
    systemWorker:
      certFile: {{q (print .Dir "/client.crt")}}
      keyFile: {{q (print .Dir "/client.key")}}
      client:
        serverName: {{.ServerName}}
        rootCaFiles: [{{q (print .Dir "/ca.crt")}}]

services:
  frontend:
    rpc:
      grpcPort: {{.Frontend}}
      httpPort: {{.FrontendHTTP}}
      membershipPort: {{.FrontendMembership}}
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: {{.History}}
      membershipPort: {{.HistoryMembership}}
      bindOnLocalHost: true
  matching:
    rpc:
      grpcPort: {{.Matching}}
      membershipPort: {{.MatchingMembership}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{.SystemWorker}}
      membershipPort: {{.SystemWorkerMembership}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.Frontend}}"

dcRedirectionPolicy:
  policy: noop
`))

// uiConfig is the Web UI server's configuration: on 127.0.0.1, reaching the frontend with the
// client certificate, nothing fetched from outside.
var uiConfig = template.Must(template.New("base.yaml").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(`temporalGrpcAddress: {{q .Address}}
host: 127.0.0.1
port: {{.Port}}
enableUi: true
defaultNamespace: {{q .Namespace}}
disableNewsFetch: true
notifyOnNewVersion: false
refreshInterval: 1m
tls:
  caFile: {{q .CAFile}}
  certFile: {{q .CertFile}}
  keyFile: {{q .KeyFile}}
  serverName: {{q .ServerName}}
  enableHostVerification: true
`))
