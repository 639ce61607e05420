// Package env starts the local multi-cluster environment karmadaflow is tested, demonstrated
// and benchmarked against: one etcd shared by real kube-apiservers (a host cluster, a Karmada
// control plane and N member clusters), kube-controller-managers, kube-schedulers, KWOK
// standing in for kubelets, and a Temporal dev server with its Web UI (or, with the postgres
// backend, the Temporal server on PostgreSQL with mTLS and the Web UI server). Everything listens on
// 127.0.0.1 and runs from the binaries `make tools` builds into bin/. With
// Options.BesideKarmada the control plane is a Karmada control plane run by Karmada's own
// components (karmada.go), for karmadaflow to run beside them.
package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/karmadaflow/karmadaflow/test/env/podrunner"
)

// MaxMembers is the largest number of member clusters Start accepts, and MaxFullMembers the
// largest number of full ones among them: beyond MaxFullMembers, members must be light
// (Options.LightMembers), which is what lets MaxMembers of them fit on a 2-core machine.
const (
	MaxMembers     = 20
	MaxFullMembers = 4
)

// Cluster names of the host and the control plane.
const (
	HostName         = "host"
	ControlPlaneName = "karmada"
)

// markerFile marks a directory as an environment's, so a reused Dir can be wiped safely.
const markerFile = ".karmadaflow-env"

// Options configure Start. The zero value is a usable default.
type Options struct {
	// Members is the number of member clusters, named member1..memberN; 0 means 2.
	Members int
	// LightMembers is how many of the Members are light: the last ones, so that member1 is
	// full whenever one is. A light member runs kube-apiserver and KWOK with its fake node,
	// and no kube-controller-manager or kube-scheduler (see Cluster.Light for what it lacks).
	// 0 means every member is full; at most MaxFullMembers may be.
	LightMembers int
	// Dir holds certificates, kubeconfigs, etcd data and logs. Empty means a new temporary
	// directory. An existing Dir must be empty or an earlier environment's (it is wiped).
	Dir string
	// Keep leaves Dir in place after Stop; the KEEP environment variable set to anything but
	// "" or "0" or "false" does the same.
	Keep bool
	// BinDir holds the binaries; empty means <repo>/bin.
	BinDir string
	// CRDDir holds the CRD YAML files installed into the control plane; empty means
	// <repo>/deploy/crds, skipped with a warning if it does not exist yet.
	CRDDir string
	// TemporalBackend is TemporalDev (the CLI's dev server, the default when empty) or
	// TemporalPostgres (the Temporal server on PostgreSQL with mTLS, as in production).
	TemporalBackend string
	// TemporalPort and TemporalUIPort are the frontend's and the UI's ports; 0 means a free port.
	TemporalPort   int
	TemporalUIPort int
	// TemporalDBFile makes the dev server persist into this SQLite file; empty means in memory.
	TemporalDBFile string
	// PlayPods runs the pods karmadaflow provisions into the host cluster (label
	// app.kubernetes.io/managed-by=karmadaflow) for real, with the binaries of BinDir,
	// instead of letting KWOK fake them: see package podrunner.
	PlayPods bool
	// BesideKarmada makes the control plane a Karmada control plane run by Karmada's own
	// components from BinDir (karmada-aggregated-apiserver, -webhook, -controller-manager and
	// -scheduler), as upstream deploys them, for karmadaflow to run beside: Karmada's CRDs
	// from its CRD tarball instead of CRDDir's, Clusters served by the aggregated API server,
	// members joined in Push mode and marked Ready by Karmada. See karmada.go.
	BesideKarmada bool
	// KarmadaControllers is karmada-controller-manager's --controllers with BesideKarmada;
	// empty means DefaultKarmadaControllers.
	KarmadaControllers string
	// Logf receives progress and per-phase durations; nil discards them.
	Logf func(format string, args ...any)
}

// Env is a running environment. Stop it when done.
type Env struct {
	Dir          string
	Temporal     Temporal
	Host         *Cluster
	ControlPlane *Cluster
	Members      []*Cluster
	// CRDTarballURL serves Karmada's CRD tarball on loopback, for the worker's
	// --crd-tarball-url ({{.Version}} is left for the worker to fill in).
	CRDTarballURL string

	opts    Options
	etcdURL string
	echo    *echoServer        // where KWOK forwards pod ports
	pods    *podrunner.Runner  // with PlayPods: plays the host's provisioned pods
	crds    *crdTarballServer  // serves CRDTarballURL
	karmada *karmadaComponents // with BesideKarmada: Karmada's components of the control plane

	ports     portPool
	guard     *ConnectionGuard
	addresses *addressBlock // the loopback block of node, pod and Service addresses

	mu       sync.Mutex
	procs    []*process
	temporal *process // the dev server

	stopOnce sync.Once
	stopping bool // set by Stop, under mu: no process is started again
	stopErr  error
}

// Start brings up the environment and returns once every cluster is ready, each member is
// registered in the control plane, every fake node is schedulable and Temporal answers. On
// failure everything started is stopped again; the error carries the failing log's tail.
func Start(ctx context.Context, opts Options) (*Env, error) {
	begin := time.Now()
	if err := opts.complete(); err != nil {
		return nil, err
	}
	e := &Env{opts: opts, guard: StartConnectionGuard()}
	if err := e.start(ctx); err != nil {
		if stopErr := e.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if !e.opts.Keep && e.Dir != "" {
			err = fmt.Errorf("%w\n(%s was removed; set KEEP=1 to keep logs and data)", err, e.Dir)
		}
		return nil, fmt.Errorf("start local environment: %w", err)
	}
	e.logf("env: ready in %.1fs (dir %s)", time.Since(begin).Seconds(), e.Dir)
	return e, nil
}

func (o *Options) complete() error {
	if o.Members == 0 {
		o.Members = 2
	}
	if o.Members < 1 || o.Members > MaxMembers {
		return fmt.Errorf("members must be between 1 and %d, got %d", MaxMembers, o.Members)
	}
	if o.LightMembers < 0 || o.LightMembers > o.Members {
		return fmt.Errorf("light members must be between 0 and the %d members, got %d", o.Members, o.LightMembers)
	}
	if full := o.Members - o.LightMembers; full > MaxFullMembers {
		return fmt.Errorf("at most %d members may be full, got %d of %d: make the others light (LightMembers)", MaxFullMembers, full, o.Members)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	binaries := requiredBinaries
	switch o.TemporalBackend {
	case "", TemporalDev:
		o.TemporalBackend = TemporalDev
	case TemporalPostgres:
		if o.TemporalDBFile != "" {
			return errors.New("TemporalDBFile is for the dev server; the postgres backend keeps its data in Dir")
		}
		if _, err := postgresBinDir(); err != nil {
			return err
		}
		binaries = append(slices.Clone(binaries), binTemporalServer, binTemporalSQLTool, binTemporalUI)
	default:
		return fmt.Errorf("Temporal backend %q: want %q or %q", o.TemporalBackend, TemporalDev, TemporalPostgres)
	}
	if o.BesideKarmada {
		binaries = append(slices.Clone(binaries), karmadaBinaries...)
		if o.KarmadaControllers == "" {
			o.KarmadaControllers = DefaultKarmadaControllers
		}
	} else if o.KarmadaControllers != "" {
		return errors.New("KarmadaControllers is for BesideKarmada")
	}
	if v := os.Getenv("KEEP"); v != "" && v != "0" && v != "false" {
		o.Keep = true
	}
	var root string
	if o.BinDir == "" || o.CRDDir == "" {
		var err error
		if root, err = RepoRoot(); err != nil {
			return err
		}
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(root, "bin")
	}
	if o.CRDDir == "" {
		o.CRDDir = filepath.Join(root, "deploy", "crds")
		if _, err := os.Stat(o.CRDDir); err != nil {
			o.Logf("env: WARNING: no CRDs installed: %s does not exist", o.CRDDir)
			o.CRDDir = ""
		}
	} else if _, err := os.Stat(o.CRDDir); err != nil {
		return fmt.Errorf("CRD directory: %w", err)
	}
	var err error
	for _, p := range []*string{&o.BinDir, &o.CRDDir, &o.TemporalDBFile} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	return checkBinaries(o.BinDir, binaries)
}

func (e *Env) logf(format string, args ...any) { e.opts.Logf(format, args...) }

// phase logs how long a named step took.
func (e *Env) phase(name string, since time.Time) {
	e.logf("env: %-32s %5.1fs", name, time.Since(since).Seconds())
}

func (e *Env) start(ctx context.Context) error {
	begin := time.Now()
	if err := e.prepareDir(); err != nil {
		return err
	}
	stages, err := kwokStages()
	if err != nil {
		return err
	}
	if e.echo, err = startEchoServer(); err != nil {
		return err
	}
	if e.crds, err = startCRDTarballServer(e.logf); err != nil {
		return err
	}
	e.CRDTarballURL = e.crds.url
	e.logf("env: CRD tarball at %s", e.crds.describe())

	// Node addresses are where API servers reach KWOK's kubelet endpoint and where NodePort
	// Services are served: a loopback address of its own per cluster, in the environment's
	// address block. Pod CIDRs are data only.
	if e.addresses, err = takeAddressBlock(); err != nil {
		return err
	}
	e.logf("env: address block %d (node addresses %s and on)", e.addresses.n, e.addresses.nodeIP(0))
	e.Host = &Cluster{Name: HostName, Role: RoleHost, PodCIDR: "10.250.0.0/16", NodeIP: e.addresses.nodeIP(0)}
	e.ControlPlane = &Cluster{Name: ControlPlaneName, Role: RoleControlPlane}
	for i := 1; i <= e.opts.Members; i++ {
		e.Members = append(e.Members, &Cluster{
			Name:    "member" + strconv.Itoa(i),
			Role:    RoleMember,
			Light:   i > e.opts.Members-e.opts.LightMembers,
			PodCIDR: fmt.Sprintf("10.%d.0.0/16", i),
			NodeIP:  e.addresses.nodeIP(i),
		})
	}
	clusters := e.Clusters()
	// etcd client+peer; Temporal frontend, UI, HTTP API, metrics.
	ports, err := e.ports.reserve(6)
	if err != nil {
		return err
	}
	var sp serverPorts
	if e.opts.TemporalBackend == TemporalPostgres {
		// The server stores its membership ports as a SQL smallint.
		p, err := e.ports.reserveBelow(serverPortCount, 20000, 32768)
		if err != nil {
			return err
		}
		sp = newServerPorts(p)
	}
	etcdPort, etcdPeerPort := ports[0], ports[1]
	temporalPorts := temporalPorts{frontend: ports[2], ui: ports[3], http: ports[4], metrics: ports[5]}
	if err := e.useFixedPort(&temporalPorts.frontend, e.opts.TemporalPort); err != nil {
		return fmt.Errorf("temporal frontend: %w", err)
	}
	if err := e.useFixedPort(&temporalPorts.ui, e.opts.TemporalUIPort); err != nil {
		return fmt.Errorf("temporal UI: %w", err)
	}
	for _, c := range clusters {
		// The apiserver's port, then one per component.
		components := c.componentBinaries()
		p, err := e.ports.reserve(1 + len(components))
		if err != nil {
			return err
		}
		componentPorts := map[string]int{}
		for i, bin := range components {
			componentPorts[bin] = p[1+i]
		}
		if c.Role != RoleControlPlane {
			c.NodeName = c.Name + "-worker"
		}
		if err := c.prepare(e.Dir, p[0], componentPorts); err != nil {
			return err
		}
		if c.NodeName != "" {
			stages := stages
			if c == e.Host && e.opts.PlayPods {
				if stages, err = excludePlayedPods(stages); err != nil {
					return err
				}
			}
			if err := c.writeKWOKConfig(stages, e.echo.address()); err != nil {
				return fmt.Errorf("KWOK configuration of cluster %s: %w", c.Name, err)
			}
		}
	}
	if e.opts.BesideKarmada {
		if err := e.prepareKarmada(); err != nil {
			return fmt.Errorf("Karmada components: %w", err)
		}
	}
	e.phase("prepare (certs, kubeconfigs)", begin)

	// etcd binds its ports before Temporal starts picking random ones for its services.
	etcd, err := e.launchEtcd(etcdPort, etcdPeerPort)
	if err != nil {
		return err
	}
	// The apiservers' ports are released only once Temporal has picked its own.
	temporalUp := make(chan struct{})
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		begin := time.Now()
		if err := e.startTemporal(gctx, temporalPorts, sp, temporalUp); err != nil {
			return err
		}
		e.phase("temporal ready", begin)
		return nil
	})
	g.Go(func() error {
		if err := waitFor(gctx, 30*time.Second, "etcd health at "+e.etcdURL, func(ctx context.Context) error {
			return httpOK(ctx, e.etcdURL+"/health")
		}, etcd); err != nil {
			return err
		}
		e.phase("etcd ready", begin)
		select {
		case <-temporalUp:
		case <-gctx.Done():
			return gctx.Err()
		}
		if err := e.startClusters(gctx); err != nil {
			return err
		}
		return e.startPodRunner(gctx)
	})
	return g.Wait()
}

// useFixedPort replaces a reserved port by the wanted one, if any, failing if it is taken.
func (e *Env) useFixedPort(port *int, want int) error {
	if want == 0 {
		return nil
	}
	if err := e.ports.hold(want); err != nil {
		return err
	}
	e.ports.release(*port)
	*port = want
	return nil
}

// prepareDir creates Dir (or a temporary one) and the logs directory.
func (e *Env) prepareDir() error {
	dir := e.opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "karmadaflow-env-")
		if err != nil {
			return err
		}
		e.Dir = tmp
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		entries, err := os.ReadDir(abs)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if len(entries) > 0 {
			if _, err := os.Stat(filepath.Join(abs, markerFile)); err != nil {
				return fmt.Errorf("directory %s is not empty and not a previous environment's; refusing to wipe it", abs)
			}
			if err := os.RemoveAll(abs); err != nil {
				return fmt.Errorf("wipe previous environment in %s: %w", abs, err)
			}
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return err
		}
		e.Dir = abs
	}
	if err := os.WriteFile(filepath.Join(e.Dir, markerFile), nil, 0o644); err != nil {
		return err
	}
	return os.MkdirAll(filepath.Join(e.Dir, "logs"), 0o755)
}

// startProcess starts one binary of BinDir with its log in <dir>/logs/<name>.log, releasing
// the reserved ports it is going to bind.
func (e *Env) startProcess(name, bin string, args []string, workDir string, tier int, ports ...int) (*process, error) {
	e.ports.release(ports...)
	p, err := startProcess(name, filepath.Join(e.opts.BinDir, bin), args, workDir, filepath.Join(e.Dir, "logs", name+".log"), tier)
	if err != nil {
		return nil, err
	}
	e.track(p)
	return p, nil
}

func (e *Env) track(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = append(e.procs, p)
}

// startClusters starts every cluster, then installs CRDs (the Karmada CRD in the host, all in
// the control plane; beside Karmada, Karmada's own with its components), registers the
// members and waits for the fake nodes.
func (e *Env) startClusters(ctx context.Context) error {
	begin := time.Now()
	var crds map[string]*apiextensionsv1.CustomResourceDefinition
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range e.Clusters() {
		g.Go(func() error {
			if err := e.startCluster(gctx, c); err != nil {
				return err
			}
			if c == e.Host {
				_, err := e.installCRDs(gctx, c, func(name string) bool { return name == hostCRDName })
				return err
			}
			if c != e.ControlPlane {
				return nil
			}
			if e.opts.BesideKarmada {
				return e.startKarmada(gctx)
			}
			begin := time.Now()
			var err error
			if crds, err = e.installCRDs(gctx, c, nil); err != nil {
				return err
			}
			e.phase("control plane CRDs established", begin)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	e.phase("all clusters started", begin)

	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error {
		begin := time.Now()
		if err := e.registerMembers(gctx, crds); err != nil {
			return err
		}
		e.phase("control plane members registered", begin)
		return nil
	})
	for _, c := range e.Clusters() {
		if c.NodeName == "" {
			continue
		}
		g.Go(func() error {
			begin := time.Now()
			c.mu.Lock()
			watched := append([]*process{c.apiserver}, c.components...)
			c.mu.Unlock()
			if err := waitFor(gctx, nodeReadyTimeout, "node "+c.NodeName+" Ready and untainted", c.nodeSchedulable, watched...); err != nil {
				return fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			e.phase(c.Name+" node schedulable", begin)
			return nil
		})
	}
	return g.Wait()
}

// launchEtcd starts the etcd all clusters share; the caller waits for its health.
func (e *Env) launchEtcd(port, peerPort int) (*process, error) {
	clientURL := "http://127.0.0.1:" + strconv.Itoa(port)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	e.etcdURL = clientURL
	args := []string{
		"--name=env",
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=env=" + peerURL,
		"--unsafe-no-fsync", // throwaway data: durability is not worth the latency
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	}
	return e.startProcess("etcd", binEtcd, args, e.Dir, tierStorage, port, peerPort)
}

// startCluster starts a cluster's apiserver, waits for it, then starts its other components
// and registers its fake node.
func (e *Env) startCluster(ctx context.Context, c *Cluster) error {
	begin := time.Now()
	p, err := e.startProcess(c.Name+"-kube-apiserver", binAPI, c.apiserverArgs(e.etcdURL), c.dir, tierAPIServer, c.port)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	if err := c.waitAPIServer(ctx, p); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	e.phase(c.Name+" apiserver ready", begin)

	for _, bin := range c.componentBinaries() {
		p, err := e.startProcess(c.Name+"-"+bin, bin, c.componentArgs(bin), c.dir, tierComponent, c.componentPorts[bin])
		if err != nil {
			return err
		}
		c.mu.Lock()
		if bin == binKWOK {
			c.kwok = p
			go e.keepKWOKRunning(c)
		} else {
			c.components = append(c.components, p)
		}
		c.mu.Unlock()
	}
	if c.NodeName == "" {
		return nil
	}
	return c.registerNode(ctx)
}

// kwokRestarts bounds how often keepKWOKRunning restarts one KWOK.
const kwokRestarts = 5

// keepKWOKRunning starts the cluster's KWOK again whenever it exits while the environment
// runs. KWOK v0.8.0 can die of a data race while it first compiles its stages ("fatal error:
// concurrent map writes" in the CEL type cache of github.com/wzshiming/easycel); KWOK keeps
// no state of its own, so a new one carries on where it stopped.
func (e *Env) keepKWOKRunning(c *Cluster) {
	c.mu.Lock()
	p := c.kwok
	c.mu.Unlock()
	for range kwokRestarts {
		<-p.done
		e.mu.Lock()
		if e.stopping {
			e.mu.Unlock()
			return
		}
		next, err := p.restart()
		if err == nil {
			e.procs = append(e.procs, next)
		}
		e.mu.Unlock()
		if err != nil {
			e.logf("env: %s exited (%v) and did not start again: %v", p.name, p.err, err)
			return
		}
		e.logf("env: %s exited (%v), started again", p.name, p.err)
		c.mu.Lock()
		c.kwok = next
		c.mu.Unlock()
		p = next
	}
}

// EtcdURL is the client URL of the etcd every cluster shares, for tests that start an API
// server of their own under another --etcd-prefix.
func (e *Env) EtcdURL() string { return e.etcdURL }

// Clusters returns the host, the control plane and the members, in that order.
func (e *Env) Clusters() []*Cluster {
	return append([]*Cluster{e.Host, e.ControlPlane}, e.Members...)
}

// Processes returns the pid of every running process of the environment by its name, that of
// its log ("etcd", "<cluster>-kube-apiserver", "<cluster>-kwok", ...), for measuring what each
// part costs.
func (e *Env) Processes() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	pids := map[string]int{}
	for _, p := range e.procs {
		if !p.exited() {
			pids[p.name] = p.pid()
		}
	}
	return pids
}

// Member returns the named member cluster, or nil.
func (e *Env) Member(name string) *Cluster {
	for _, m := range e.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// StopMemberAPIServer stops only the named member's kube-apiserver, making the member
// unreachable while its other components keep running.
func (e *Env) StopMemberAPIServer(name string) error {
	m := e.Member(name)
	if m == nil {
		return fmt.Errorf("no member cluster %q", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The apiserver stops listening at once on SIGTERM; its clean-up afterwards may wait
	// for clients, which a fault injection need not.
	if err := m.apiserver.stop(2 * time.Second); err != nil {
		return fmt.Errorf("stop kube-apiserver of member %s: %w", name, err)
	}
	e.logf("env: stopped kube-apiserver of %s", name)
	return nil
}

// FreezeMemberAPIServer stops the named member's kube-apiserver with SIGSTOP: connections
// are accepted by the kernel but never answered, as with a hung or partitioned server. The
// member's Cluster stays as it is. ThawMemberAPIServer resumes it.
func (e *Env) FreezeMemberAPIServer(name string) error {
	return e.signalMemberAPIServer(name, syscall.SIGSTOP)
}

// ThawMemberAPIServer resumes a kube-apiserver FreezeMemberAPIServer stopped.
func (e *Env) ThawMemberAPIServer(name string) error {
	return e.signalMemberAPIServer(name, syscall.SIGCONT)
}

func (e *Env) signalMemberAPIServer(name string, sig syscall.Signal) error {
	m := e.Member(name)
	if m == nil {
		return fmt.Errorf("no member cluster %q", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := syscall.Kill(m.apiserver.pid(), sig); err != nil {
		return fmt.Errorf("%s to kube-apiserver of member %s: %w", sig, name, err)
	}
	return nil
}

// StartMemberAPIServer restarts the named member's kube-apiserver on the same port with the
// same flags and waits until it is ready. It does nothing if the apiserver is running.
func (e *Env) StartMemberAPIServer(name string) error {
	m := e.Member(name)
	if m == nil {
		return fmt.Errorf("no member cluster %q", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.apiserver.exited() {
		return nil
	}
	begin := time.Now()
	p, err := m.apiserver.restart()
	if err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	e.track(p)
	m.apiserver = p
	if err := m.waitAPIServer(context.Background(), p); err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	e.phase(name+" apiserver restarted", begin)
	return nil
}

// Stop kills every process of the environment (SIGTERM, then SIGKILL after a few seconds),
// waits for them and removes Dir unless Keep. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		begin := time.Now()
		e.mu.Lock()
		e.stopping = true
		procs := append([]*process(nil), e.procs...)
		pods := e.pods
		e.mu.Unlock()
		// Played pods end first: their processes talk to the API servers and etcd.
		if pods != nil {
			pods.Stop()
		}
		var errs []error
		var errMu sync.Mutex
		for tier := range tierCount {
			var wg sync.WaitGroup
			for _, p := range procs {
				if p.tier != tier {
					continue
				}
				wg.Go(func() {
					if err := p.stop(stopGrace); err != nil {
						errMu.Lock()
						errs = append(errs, err)
						errMu.Unlock()
					}
				})
			}
			wg.Wait()
		}
		e.ports.releaseAll()
		e.addresses.release()
		if e.echo != nil {
			_ = e.echo.close()
		}
		if e.crds != nil {
			_ = e.crds.close()
		}
		e.guard.Close()
		if e.Dir != "" && !e.opts.Keep {
			if err := os.RemoveAll(e.Dir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", e.Dir, err))
			}
		} else if e.Dir != "" {
			e.logf("env: kept %s", e.Dir)
		}
		e.phase("stopped", begin)
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// ClusterSummary is one cluster in Summary.
type ClusterSummary struct {
	Name       string `json:"name"`
	Role       Role   `json:"role"`
	Server     string `json:"server"`
	Kubeconfig string `json:"kubeconfig"`
	PodCIDR    string `json:"podCIDR,omitempty"`
	NodeName   string `json:"nodeName,omitempty"`
	// Light says the member is light (Options.LightMembers).
	Light bool `json:"light,omitempty"`
}

// Summary is the machine-readable description of a running environment (no secrets).
type Summary struct {
	Dir          string           `json:"dir"`
	Temporal     Temporal         `json:"temporal"`
	Host         string           `json:"host"`
	ControlPlane string           `json:"controlPlane"`
	Members      []string         `json:"members"`
	Clusters     []ClusterSummary `json:"clusters"`
	// CRDTarballURL is Env.CRDTarballURL, for the worker's --crd-tarball-url.
	CRDTarballURL string `json:"crdTarballURL"`
	// BesideKarmada says the control plane runs Karmada's own components (Options.BesideKarmada).
	BesideKarmada bool `json:"besideKarmada,omitempty"`
}

// Summary describes the environment for scripts.
func (e *Env) Summary() Summary {
	s := Summary{Dir: e.Dir, Temporal: e.Temporal, Host: e.Host.Name, ControlPlane: e.ControlPlane.Name, CRDTarballURL: e.CRDTarballURL,
		BesideKarmada: e.opts.BesideKarmada}
	for _, m := range e.Members {
		s.Members = append(s.Members, m.Name)
	}
	for _, c := range e.Clusters() {
		s.Clusters = append(s.Clusters, ClusterSummary{
			Name: c.Name, Role: c.Role, Server: c.Server, Kubeconfig: c.Kubeconfig, PodCIDR: c.PodCIDR, NodeName: c.NodeName,
			Light: c.Light,
		})
	}
	return s
}

// WriteSummary prints where everything is and commands to try.
func (e *Env) WriteSummary(w io.Writer) error {
	host := e.Temporal.Address
	var b []byte
	add := func(format string, args ...any) { b = fmt.Appendf(b, format+"\n", args...) }
	add("karmadaflow local environment (%s)", e.Dir)
	add("")
	add("Temporal")
	add("  Web UI:     %s", e.Temporal.UIURL)
	add("  frontend:   %s   namespace %s", host, e.Temporal.Namespace)
	if e.Temporal.DBFile != "" {
		add("  database:   %s", e.Temporal.DBFile)
	}
	if e.Temporal.CAFile != "" {
		add("  server:     %d history shards on PostgreSQL, mTLS (CA %s)", temporalServerShards, e.Temporal.CAFile)
	}
	add("")
	add("Clusters (kubeconfigs verify TLS against each cluster's CA)")
	for _, c := range e.Clusters() {
		cidr := ""
		if c.PodCIDR != "" {
			cidr = "pods " + c.PodCIDR
		}
		role := string(c.Role)
		if c.Light {
			role += " (light)"
		}
		add("  %-8s %-14s %-24s %-17s %s", c.Name, role, c.Server, cidr, c.Kubeconfig)
	}
	if e.karmada != nil {
		add("")
		add("Karmada (beside karmadaflow): %s, logs in %s",
			strings.Join(karmadaBinaries, ", "), filepath.Join(e.Dir, "logs", "karmada-*.log"))
	}
	add("")
	add("Try")
	add("  export KUBECONFIG=%s", e.ControlPlane.Kubeconfig)
	add("  kubectl get clusters.cluster.karmada.io")
	add("  kubectl --kubeconfig %s get nodes,pods -A", e.Members[0].Kubeconfig)
	add("  temporal workflow list %s", strings.Join(e.Temporal.CLIFlags(), " "))
	if e.Temporal.CAFile == "" {
		add("  tctl --address %s workflow list        # the older CLI, same API", host)
	}
	add("  open %s", e.Temporal.UIURL)
	_, err := w.Write(b)
	return err
}

func createNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
