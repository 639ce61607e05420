// Package runsmoke tests the README's first command: `make run` with RUN_SMOKE=1 brings up
// the local environment and the service, applies the examples of all three capabilities,
// shows each working, then runs every command of the "Try" section it prints and stops. It
// runs more than once in a row, after a killed run too, as a user would.
package runsmoke

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// TestMakeRun runs `make run` three times in a row, as a user does: the first run is killed
// with SIGKILL once the worker and starter are up (run.sh gets no chance to stop what it
// started), then two smoke runs follow, each stopping cleanly. Each later run must start
// from what the earlier one left behind: its processes, its kept directory and env.json.
func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("make run takes minutes")
	}
	root, err := env.RepoRoot()
	require.NoError(t, err)
	guard := env.StartConnectionGuard()
	defer guard.Close()

	killedRun(t, root)
	for i := 1; i <= 2; i++ {
		t.Run(fmt.Sprintf("smoke-%d", i), func(t *testing.T) { smokeRun(t, root) })
	}

	assert.Empty(t, guard.Outside(), "connections outside loopback")
	assert.Empty(t, env.OutsideAddressesInLogs(filepath.Join(root, ".localenv", "logs")), "dials outside loopback in the logs")
}

// makeRun is `make run` in its own process group, its output teed to the test log and out.
func makeRun(ctx context.Context, t *testing.T, root string, out io.Writer, extraEnv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "run")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	cmd.Stdout = io.MultiWriter(out, testWriter{t})
	cmd.Stderr = cmd.Stdout
	return cmd
}

// killedRun starts `make run`, waits until the worker and starter are ready, and SIGKILLs
// make and run.sh alone, so the environment, worker and starter are left running.
func killedRun(t *testing.T, root string) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out syncBuffer
	cmd := makeRun(ctx, t, root, &out)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ready := false
	for !ready {
		select {
		case err := <-done:
			t.Fatalf("make run ended before its worker was ready: %v", err)
		case <-ctx.Done():
			t.Fatal("make run: worker not ready in time")
		case <-time.After(time.Second):
			ready = strings.Contains(out.String(), "worker and starter are ready.")
		}
	}
	runScript := childPids(cmd.Process.Pid)
	require.NotEmpty(t, runScript, "run.sh under make")
	for _, pid := range append(runScript, cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-done
	pids, err := os.ReadFile(filepath.Join(root, ".localenv.pids"))
	require.NoError(t, err, "the killed run's pid file")
	t.Logf("killed make run; left running: %s", strings.Fields(string(pids)))
}

// smokeRun is `make run` with RUN_SMOKE=1: it shows every capability, runs the Try section
// and stops.
func smokeRun(t *testing.T, root string) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	var out syncBuffer
	cmd := makeRun(ctx, t, root, &out, "RUN_SMOKE=1")
	begin := time.Now()
	err := cmd.Run()
	t.Logf("make run (RUN_SMOKE=1) took %.1fs", time.Since(begin).Seconds())
	if err != nil {
		t.Logf("environment log tail:\n%s", tail(filepath.Join(root, ".localenv.log"), 30))
	}
	require.NoError(t, err, "make run")
	text := out.String()

	// 1. MultiClusterService: member1's endpoints dispatched into member2, status shown.
	assert.Regexp(t, `(?m)^member1\.foo-\S+\s+IPv4\s+8080\s+10\.1\.`, text, "member1's slice of foo in member2")
	// 2. Provisioning: Ready with its API server Service, and the new control plane answers.
	assert.Regexp(t, `(?m)^demo\s+True`, text, "Karmada tenant1/demo Ready")
	assert.Regexp(t, `status.apiServerService: \{"name":"demo-karmada-apiserver","nodePort":\d+,"port":5443,"serviceType":"NodePort"\}`, text)
	assert.Regexp(t, `(?m)^deployment.apps/demo-karmada-controller-manager\s+1/1\s`, text, "karmada-controller-manager played and Ready")
	assert.Regexp(t, `(?m)^statefulset.apps/demo-karmada-etcd\s+1/1\s`, text, "the instance's own etcd played and Ready")
	assert.Regexp(t, `(?m)^member1\s+\S+\s+Push\s+True\s`, text, "member1 joined the new control plane, Ready")
	assert.Regexp(t, `(?m)^resourcebinding.work.karmada.io/hello-deployment\s+`, text, "the Deployment bound by karmada-scheduler")
	assert.Regexp(t, `(?m)^hello\s+\d/2\s`, text, "the Deployment propagated into member1")
	// 3. Proxy: member1's pods, with the cluster annotation.
	assert.Regexp(t, `(?m)^member1\s+demo\s+foo-`, text, "pods through the proxy with their cluster")
	// The Try section ran, every command of it.
	assert.Contains(t, text, "== RUN_SMOKE: all Try commands succeeded ==")
	assert.Len(t, regexp.MustCompile(`(?m)^\+ `).FindAllString(text, -1), 14, "Try commands run")
	assert.Contains(t, text, "deployment.apps/foo scaled")
	assert.Contains(t, text, `KarmadaKind="Karmada" AND KarmadaName="demo"`, "UI filters printed")
	_, err = os.Stat(filepath.Join(root, ".localenv.pids"))
	assert.True(t, os.IsNotExist(err), "a clean stop removes the pid file")
}

// childPids are the direct children of pid.
func childPids(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
