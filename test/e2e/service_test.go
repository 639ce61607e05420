package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// service is the worker and starter binaries, built from this checkout and run against the
// environment.
type service struct {
	env     *env.Env
	binDir  string
	logDir  string
	mu      sync.Mutex
	procs   map[string]*exec.Cmd
	metrics map[string]string // component -> metrics address
}

func startService(ctx context.Context, e *env.Env) (*service, error) {
	s := &service{env: e, binDir: filepath.Join(e.Dir, "service-bin"), logDir: filepath.Join(e.Dir, "logs"),
		procs: map[string]*exec.Cmd{}, metrics: map[string]string{}}
	for _, component := range []string{"worker", "starter"} {
		out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(s.binDir, component), "github.com/karmadaflow/karmadaflow/"+component).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("building %s: %v\n%s", component, err, out)
		}
		addr, err := freeAddress()
		if err != nil {
			return nil, err
		}
		s.metrics[component] = addr
	}
	for _, component := range []string{"worker", "starter"} {
		if err := s.start(ctx, component); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

func (s *service) args(component string) []string {
	args := []string{
		"--temporal-address", s.env.Temporal.Address,
		"--temporal-namespace", s.env.Temporal.Namespace,
		"--karmada-kubeconfig", s.env.ControlPlane.Kubeconfig,
		"--host-kubeconfig", s.env.Host.Kubeconfig,
		"--metrics-bind-address", s.metrics[component],
		"--log-format", "console",
	}
	switch component {
	case "worker":
		args = append(args, "--cluster-unhealthy-grace", testUnhealthyGrace.String())
	case "starter":
		args = append(args, "--cluster-probe-interval", testProbeInterval.String())
	}
	return args
}

// start runs component and waits until its /readyz answers 200.
func (s *service) start(ctx context.Context, component string) error {
	logFile, err := os.OpenFile(filepath.Join(s.logDir, "service-"+component+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(s.binDir, component), s.args(component)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", component, err)
	}
	go func() { _ = cmd.Wait(); logFile.Close() }()
	s.mu.Lock()
	s.procs[component] = cmd
	s.mu.Unlock()
	if err := waitHTTP(ctx, "http://"+s.metrics[component]+"/readyz", 2*time.Minute); err != nil {
		return fmt.Errorf("%s not ready: %w\n%s", component, err, tail(logFile.Name()))
	}
	return nil
}

// kill ends component at once (SIGKILL), as a crash would.
func (s *service) kill(component string) {
	s.mu.Lock()
	cmd := s.procs[component]
	delete(s.procs, component)
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_, _ = cmd.Process.Wait()
	}
}

func (s *service) stop() {
	s.mu.Lock()
	procs := s.procs
	s.procs = map[string]*exec.Cmd{}
	s.mu.Unlock()
	for _, cmd := range procs {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, cmd := range procs {
		for cmd.ProcessState == nil && time.Now().Before(deadline) && syscall.Kill(cmd.Process.Pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
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

func freeAddress() (string, error) {
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
