// Package runsmoke tests the README's first command: `make run` with RUN_SMOKE=1 brings up
// the local environment and the service, applies the examples of all three capabilities,
// shows each working, then runs every command of the "Try" section it prints and stops.
package runsmoke

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/test/env"
)

func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("make run takes minutes")
	}
	root, err := env.RepoRoot()
	require.NoError(t, err)
	guard := env.StartConnectionGuard()
	defer guard.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "run")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RUN_SMOKE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, testWriter{t})
	cmd.Stderr = cmd.Stdout
	begin := time.Now()
	err = cmd.Run()
	t.Logf("make run (RUN_SMOKE=1) took %.1fs", time.Since(begin).Seconds())
	if err != nil {
		t.Logf("environment log tail:\n%s", tail(filepath.Join(root, ".localenv.log"), 30))
	}
	require.NoError(t, err, "make run")
	text := out.String()

	// 1. MultiClusterService: member1's endpoints dispatched into member2, status shown.
	assert.Regexp(t, `(?m)^member1-foo-\S+\s+IPv4\s+8080\s+10\.1\.`, text, "member1's slice of foo in member2")
	// 2. Provisioning: Ready with its API server Service, and the new control plane answers.
	assert.Regexp(t, `(?m)^demo\s+True`, text, "Karmada tenant1/demo Ready")
	assert.Regexp(t, `status.apiServerService: \{"name":"demo-karmada-apiserver","nodePort":\d+,"port":5443,"serviceType":"NodePort"\}`, text)
	assert.Regexp(t, `(?m)^karmada-system\s+Active`, text, "namespaces of the new control plane through its admin kubeconfig")
	// 3. Proxy: member1's pods, with the cluster annotation.
	assert.Regexp(t, `(?m)^member1\s+demo\s+foo-`, text, "pods through the proxy with their cluster")
	// The Try section ran, every command of it.
	assert.Contains(t, text, "== RUN_SMOKE: all Try commands succeeded ==")
	assert.Len(t, regexp.MustCompile(`(?m)^\+ `).FindAllString(text, -1), 13, "Try commands run")
	assert.Contains(t, text, "deployment.apps/foo scaled")
	assert.Contains(t, text, `KarmadaKind="Karmada" AND KarmadaName="demo"`, "UI filters printed")

	assert.Empty(t, guard.Outside(), "connections outside loopback")
	assert.Empty(t, env.OutsideAddressesInLogs(filepath.Join(root, ".localenv", "logs")), "dials outside loopback in the logs")
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
