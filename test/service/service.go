// Package service runs karmadaflow's worker and starter, built from this checkout, against a
// local environment (test/env) for the end-to-end tests and the benchmarks: one or more
// workers and the starter, under the identities the chart's RBAC gives them, which a test may
// kill, restart and start again. `make run` does not use it: hack/run.sh starts the binaries
// itself.
package service

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// Settings the service runs with in the tests: short enough to test the unhealthy-cluster
// grace and health probing in seconds.
const (
	testUnhealthyGrace = 20 * time.Second
	testProbeInterval  = 2 * time.Second
)

// Options tune the service for a test or benchmark.
type Options struct {
	// UnhealthyGrace, ProbeInterval and FailureThreshold: 0 keeps the binaries' defaults.
	UnhealthyGrace   time.Duration
	ProbeInterval    time.Duration
	FailureThreshold time.Duration
	// PullClusterLeaseGrace is the workers' --pull-cluster-lease-grace (0: the default).
	PullClusterLeaseGrace time.Duration
	// Workers is how many workers run on the task queue: "worker", then "worker-2", ...;
	// 0 is one.
	Workers int
	// WorkerArgs and StarterArgs are appended to the flags of every worker and the starter.
	WorkerArgs  []string
	StarterArgs []string
	// FirstWorkerArgs are appended to the flags of the first worker only: what two workers
	// cannot share, such as the proxy's listening address.
	FirstWorkerArgs []string
	// ChartValues (key=value) render the chart whose ServiceAccounts and RBAC the worker and
	// the starter run under, e.g. proxy.enabled=true for the proxy's impersonation.
	ChartValues []string
	// Admin runs both with the environment's admin kubeconfigs (system:masters) instead.
	Admin bool
	// Name tells a further service apart from the first (its binaries and logs); "" is the
	// first.
	Name string
	// Source is a directory holding the karmadaflow source to build, e.g. an earlier release
	// Checkout exported ("" is this checkout); Version is stamped into the binaries ("" leaves
	// them unstamped).
	Source  string
	Version string
}

// Service is the worker and starter binaries, built from this checkout, and run against the
// environment.
type Service struct {
	opts    Options
	env     *env.Env
	workers []string // the worker instances Start runs
	binDir  string
	logDir  string
	mu      sync.Mutex
	procs   map[string]*process
	metrics map[string]string   // instance -> metrics address
	extra   map[string][]string // instance -> flags added by Restart or StartInstance
	// identities are the kubeconfigs of each component; nil with Options.Admin.
	identities map[string]kubeconfigs
}

// Build builds the worker and starter and installs the identities they run under, without
// running them: StartWorkers and StartComponent run them.
func Build(ctx context.Context, e *env.Env, opts Options) (*Service, error) {
	s := &Service{opts: opts, env: e, binDir: filepath.Join(e.Dir, "service-bin"+suffix(opts.Name)), logDir: filepath.Join(e.Dir, "logs"),
		procs: map[string]*process{}, metrics: map[string]string{}, workers: []string{"worker"}}
	for i := 2; i <= opts.Workers; i++ {
		s.workers = append(s.workers, fmt.Sprintf("worker-%d", i))
	}
	// One build links both binaries at once (into binDir/worker and binDir/starter).
	args := []string{"build", "-o", s.binDir + string(filepath.Separator)}
	if opts.Version != "" {
		args = append(args, "-ldflags", "-X github.com/karmadaflow/karmadaflow/internal/version.Version="+opts.Version)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "github.com/karmadaflow/karmadaflow/worker", "github.com/karmadaflow/karmadaflow/starter")...)
	cmd.Dir = opts.Source
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the worker and the starter: %v\n%s", err, out)
	}
	for _, instance := range s.instances() {
		addr, err := FreeAddress()
		if err != nil {
			return nil, err
		}
		s.metrics[instance] = addr
	}
	if !opts.Admin {
		if err := s.InstallIdentities(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start builds the worker and starter and runs the workers and the starter until they report
// ready.
func Start(ctx context.Context, e *env.Env, opts Options) (*Service, error) {
	s, err := Build(ctx, e, opts)
	if err != nil {
		return nil, err
	}
	for _, instance := range s.instances() {
		if err := s.StartComponent(ctx, instance); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// instances are the workers and the starter Start runs.
func (s *Service) instances() []string { return append(s.Workers(), "starter") }

// Workers are the worker instances Start runs, all on the task queue: "worker", "worker-2", ...
func (s *Service) Workers() []string { return slices.Clone(s.workers) }

// InstallIdentities (re)installs the chart's ServiceAccounts and RBAC the components run under,
// e.g. after a test changed them, and writes their kubeconfigs with fresh tokens.
func (s *Service) InstallIdentities(ctx context.Context) error {
	identities, err := installIdentities(ctx, s.env, filepath.Join(s.env.Dir, "identities"), s.opts.ChartValues)
	if err != nil {
		return err
	}
	s.identities = identities
	return nil
}

// Kubeconfigs are the host and control-plane kubeconfigs a component runs with.
func (s *Service) Kubeconfigs(component string) (host, karmada string) {
	if k, ok := s.identities[component]; ok {
		return k.host, k.karmada
	}
	return s.env.Host.Kubeconfig, s.env.ControlPlane.Kubeconfig
}

// suffix is "-<name>" for a named service, "" for the first.
func suffix(name string) string {
	if name == "" {
		return ""
	}
	return "-" + name
}

// LogFile is the log of an instance: logs/service[-<name>]-<instance>.log.
func (s *Service) LogFile(instance string) string {
	return filepath.Join(s.logDir, "service"+suffix(s.opts.Name)+"-"+instance+".log")
}

// Checkout exports commit of the repository this checkout belongs to into dir, as the Source
// of an earlier release.
func Checkout(ctx context.Context, commit, dir string) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive --format=tar "$1" | tar -x -C "$2"`, "checkout", commit, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("exporting commit %s (a clone with its history is needed): %v\n%s", commit, err, out)
	}
	return nil
}

// componentOf is the binary an instance runs: "starter-2" is a second starter.
func componentOf(instance string) string {
	component, _, _ := strings.Cut(instance, "-")
	return component
}

func (s *Service) args(instance string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if isAgent(instance) {
		// As the chart's member target runs it: no Temporal setting at all; its kubeconfigs
		// and cluster are the extra flags StartAgent gives.
		args := []string{"--metrics-bind-address", s.metrics[instance], "--log-format", "console"}
		if s.opts.ProbeInterval > 0 {
			args = append(args, "--cluster-probe-interval", s.opts.ProbeInterval.String())
		}
		if s.opts.FailureThreshold > 0 {
			args = append(args, "--cluster-failure-threshold", s.opts.FailureThreshold.String())
		}
		return append(args, s.extra[instance]...)
	}
	host, karmada := s.Kubeconfigs(componentOf(instance))
	args := append(s.env.Temporal.ServiceFlags(),
		"--karmada-kubeconfig", karmada,
		"--host-kubeconfig", host,
		"--metrics-bind-address", s.metrics[instance],
		"--log-format", "console",
	)
	switch componentOf(instance) {
	case "worker":
		// Karmada's CRDs from the environment's loopback server, never from github.com.
		if s.env.CRDTarballURL != "" {
			args = append(args, "--crd-tarball-url", s.env.CRDTarballURL)
		}
		if s.opts.UnhealthyGrace > 0 {
			args = append(args, "--cluster-unhealthy-grace", s.opts.UnhealthyGrace.String())
		}
		if s.opts.PullClusterLeaseGrace > 0 {
			args = append(args, "--pull-cluster-lease-grace", s.opts.PullClusterLeaseGrace.String())
		}
		args = append(args, s.opts.WorkerArgs...)
		if instance == s.workers[0] {
			args = append(args, s.opts.FirstWorkerArgs...)
		}
	case "starter":
		if s.opts.ProbeInterval > 0 {
			args = append(args, "--cluster-probe-interval", s.opts.ProbeInterval.String())
		}
		if s.opts.FailureThreshold > 0 {
			args = append(args, "--cluster-failure-threshold", s.opts.FailureThreshold.String())
		}
		args = append(args, s.opts.StarterArgs...)
	}
	return append(args, s.extra[instance]...)
}

// StartComponent runs an instance of a component ("worker", "starter", or a further instance
// StartInstance named) and waits until its /readyz answers 200.
func (s *Service) StartComponent(ctx context.Context, component string) error {
	logFile, err := os.OpenFile(s.LogFile(component), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(s.binDir, componentOf(component)), s.args(component)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", component, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	s.mu.Lock()
	s.procs[component] = p
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		s.forgetIfUnexpected(component, p, err)
		close(p.exited)
	}()
	if err := waitHTTP(ctx, "http://"+s.MetricsAddress(component)+"/readyz", 2*time.Minute); err != nil {
		return fmt.Errorf("%s not ready: %w\n%s", component, err, tail(logFile.Name()))
	}
	return nil
}

// Restart stops every process and starts the workers and the starter again with extra flags
// appended to each worker's and the starter's (nil: the usual ones), for tests of the
// service's switches.
func (s *Service) Restart(ctx context.Context, workerArgs, starterArgs []string) error {
	s.Stop()
	s.mu.Lock()
	s.extra = map[string][]string{"starter": starterArgs}
	for _, w := range s.workers {
		s.extra[w] = workerArgs
	}
	s.mu.Unlock()
	for _, instance := range s.instances() {
		if err := s.StartComponent(ctx, instance); err != nil {
			return err
		}
	}
	return nil
}

// StartInstance (re)starts an instance with extra flags appended to the usual ones (nil: none)
// and waits until it is ready; a running one is stopped first. An instance is named after its
// component, with a suffix for a further one: "starter-2" is a second starter, with its own
// metrics address and log file (logs/service-starter-2.log).
func (s *Service) StartInstance(ctx context.Context, instance string, extra []string) error {
	s.StopInstance(instance)
	s.mu.Lock()
	if s.extra == nil {
		s.extra = map[string][]string{}
	}
	s.extra[instance] = extra
	if s.metrics[instance] == "" {
		addr, err := FreeAddress()
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.metrics[instance] = addr
	}
	s.mu.Unlock()
	return s.StartComponent(ctx, instance)
}

// StopInstance ends one instance gracefully (SIGTERM, then SIGKILL after 10 s).
func (s *Service) StopInstance(instance string) {
	if p := s.take(instance); p != nil {
		stop(map[string]*process{instance: p})
	}
}

// take removes an instance's process from those running and returns it (nil: none runs).
func (s *Service) take(instance string) *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[instance]
	delete(s.procs, instance)
	return p
}

// forgetIfUnexpected handles the exit of an instance's process that no Kill or Stop asked
// for: the process is no longer counted as running (PID answers 0, StartWorkers starts it
// again), and the test output says so with the end of its log, which a CI run would otherwise
// lose with the environment's directory.
func (s *Service) forgetIfUnexpected(instance string, p *process, err error) {
	s.mu.Lock()
	unexpected := s.procs[instance] == p
	if unexpected {
		delete(s.procs, instance)
	}
	s.mu.Unlock()
	if unexpected {
		log.Printf("service: %s (pid %d) exited by itself: %v; the end of its log:\n%s", instance, p.cmd.Process.Pid, err, tail(s.LogFile(instance)))
	}
}

// Kill ends component at once (SIGKILL), as a crash would.
func (s *Service) Kill(component string) {
	if p := s.take(component); p != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// KillWorkers ends every worker Start runs at once (SIGKILL), as a crash of all of them would.
func (s *Service) KillWorkers() {
	for _, w := range s.workers {
		s.Kill(w)
	}
}

// StartWorkers starts again every worker Start runs that is not running, e.g. after
// KillWorkers, and waits until each is ready.
func (s *Service) StartWorkers(ctx context.Context) error {
	for _, w := range s.workers {
		if s.PID(w) != 0 {
			continue
		}
		if err := s.StartComponent(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// Stop ends every process (SIGTERM, then SIGKILL after 10 s).
func (s *Service) Stop() {
	s.mu.Lock()
	procs := s.procs
	s.procs = map[string]*process{}
	s.mu.Unlock()
	stop(procs)
}

func stop(procs map[string]*process) {
	for _, p := range procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline:
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// process is a running binary and a channel closed when it has exited.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// FreeAddress returns a loopback host:port that was free a moment ago.
func FreeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// Binary is the path of a component's binary, built from this checkout.
func (s *Service) Binary(component string) string { return filepath.Join(s.binDir, component) }

// MetricsAddress is the host:port of component's /metrics, /healthz and /readyz.
func (s *Service) MetricsAddress(component string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metrics[component]
}

// PID is the process ID of component, 0 when it is not running.
func (s *Service) PID(component string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[component]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}
