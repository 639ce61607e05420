package proxye2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Logs, exec, attach and port-forward of member pods, through the proxy as alice and
// directly as the member's admin. KWOK serves them in the local environment: every container
// logs the member's log file, exec runs in the member's exec directory, every pod port
// reaches an echo server.

func TestLogsReachTheMemberHoldingThePod(t *testing.T) {
	member2 := testEnv.Member("member2")
	through, err := kubectlAs("alice", "logs", "web-2")
	require.NoError(t, err, through)
	directly, err := direct(member2.Kubeconfig, "logs", "web-2")
	require.NoError(t, err, directly)
	assert.Equal(t, member2.PodLog(), directly)
	assert.Equal(t, directly, through)

	out, err := direct(testEnv.Member("member1").Kubeconfig, "logs", "web-2")
	require.Error(t, err, "member1 has no web-2")
	assert.Contains(t, out, "NotFound")

	out, err = kubectlAs("alice", "logs", "same")
	require.Error(t, err)
	assert.Contains(t, out, "member1, member2")
}

func TestLogsFollow(t *testing.T) {
	member2 := testEnv.Member("member2")
	through := startKubectl(t, kubeconfigs["alice"], nil, "logs", "-f", "web-2")
	directly := startKubectl(t, member2.Kubeconfig, nil, "logs", "-f", "web-2")
	line := "followed at " + time.Now().Format(time.RFC3339Nano)
	require.NoError(t, member2.AppendPodLog(line))
	want := member2.PodLog() + line + "\n"
	for _, k := range []*kubectlRun{through, directly} {
		require.Eventually(t, func() bool { return k.output() == want }, 20*time.Second, 100*time.Millisecond,
			"%s: %q", k.name, k.output())
	}
}

func TestExecOverWebSocketAndSPDY(t *testing.T) { expectExecInWeb2AsDirectly(t) }

// expectExecInWeb2AsDirectly runs a command in member2's web-2 through the proxy as alice and
// directly, over WebSocket and over SPDY, and expects the same output.
func expectExecInWeb2AsDirectly(t *testing.T) {
	member2 := testEnv.Member("member2")
	args := []string{"exec", "web-2", "--", "sh", "-c", "pwd; echo to-stderr >&2"}
	for _, websockets := range []string{"true", "false"} {
		t.Run("websockets="+websockets, func(t *testing.T) {
			env := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + websockets}
			through, codeThrough := runKubectl(t, kubeconfigs["alice"], env, args...)
			directly, codeDirectly := runKubectl(t, member2.Kubeconfig, env, args...)
			assert.Equal(t, 0, codeDirectly, directly)
			assert.Equal(t, 0, codeThrough, through)
			assert.Contains(t, directly, member2.ExecDir()+"\n", "the command ran in member2's pod")
			assert.Contains(t, directly, "to-stderr\n")
			assert.Equal(t, directly, through)
		})
	}
}

// TestExecWithClientGoSPDYExecutor runs a command through the proxy with client-go's SPDY
// executor, as programs do.
func TestExecWithClientGoSPDYExecutor(t *testing.T) {
	stdout, stderr, err := spdyExec(t, "alice", "web-1", "pwd; echo to-stderr >&2")
	require.NoError(t, err)
	assert.Equal(t, testEnv.Member("member1").ExecDir()+"\n", stdout)
	assert.Equal(t, "to-stderr\n", stderr)
}

// spdyExec runs script with sh in pod (namespace default) through the proxy as caller, with
// client-go's SPDY executor.
func spdyExec(t *testing.T, caller, pod, script string) (string, string, error) {
	t.Helper()
	cfg := &rest.Config{Host: proxyURL, BearerToken: tokens[caller], TLSClientConfig: rest.TLSClientConfig{CAFile: proxyCA}}
	u, err := url.Parse(proxyURL + "/api/v1/namespaces/default/pods/" + pod + "/exec")
	require.NoError(t, err)
	u.RawQuery = url.Values{"command": {"sh", "-c", script}, "container": {"app"}, "stdout": {"true"}, "stderr": {"true"}}.Encode()
	executor, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

func TestExecIsRefusedWithoutTheRight(t *testing.T) {
	// bob may view bob-ns in member1 but not exec there: member1 refuses him, not the proxy's
	// own identity.
	out, err := kubectlAs("bob", "get", "pod", "bob-pod-1", "-n", bobNamespace)
	require.NoError(t, err, out)
	for _, websockets := range []string{"true", "false"} {
		env := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + websockets}
		out, code := runKubectl(t, kubeconfigs["bob"], env, "exec", "bob-pod-1", "-n", bobNamespace, "--", "pwd")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, `User "system:serviceaccount:proxy-e2e:bob" cannot create resource "pods/exec"`, "websockets=%s", websockets)
		assert.NotContains(t, out, testEnv.Member("member1").ExecDir())
	}
	// eve may not use the proxy at all: refused before any member is asked.
	out, code := runKubectl(t, kubeconfigs["eve"], nil, "exec", "web-1", "--", "pwd")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, `resource "proxying/proxy" in API group "search.karmada.io"`)
	stdout, _, err := spdyExec(t, "eve", "web-1", "pwd")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cannot create resource "proxying/proxy" in API group "search.karmada.io"`)
	assert.Empty(t, stdout)
}

func TestAttach(t *testing.T) { expectAttachToWeb2AsDirectly(t) }

// expectAttachToWeb2AsDirectly attaches to member2's web-2 through the proxy as alice and
// directly, and expects both to see what the container writes.
func expectAttachToWeb2AsDirectly(t *testing.T) {
	member2 := testEnv.Member("member2")
	through := startKubectl(t, kubeconfigs["alice"], nil, "attach", "web-2")
	directly := startKubectl(t, member2.Kubeconfig, nil, "attach", "web-2")
	// Attach shows what the container writes from now on: write until both have seen a line.
	seen := func(k *kubectlRun) bool { return strings.Contains(k.output(), "attached line") }
	for i := 0; !seen(through) || !seen(directly); i++ {
		require.Less(t, i, 100, "through: %q\ndirectly: %q", through.output(), directly.output())
		require.NoError(t, member2.AppendPodLog(fmt.Sprintf("attached line %d", i)))
		time.Sleep(200 * time.Millisecond)
	}
	last := fmt.Sprintf("attached line %d", 1000)
	require.NoError(t, member2.AppendPodLog(last))
	for _, k := range []*kubectlRun{through, directly} {
		require.Eventually(t, func() bool { return strings.Contains(k.output(), last+"\n") }, 20*time.Second, 100*time.Millisecond,
			"%s: %q", k.name, k.output())
	}
}

func TestPortForwardRoundTrip(t *testing.T) {
	for name, kubeconfig := range map[string]string{"through": kubeconfigs["alice"], "directly": testEnv.Member("member2").Kubeconfig} {
		t.Run(name, func(t *testing.T) { expectPortForwardRoundTripToWeb2(t, kubeconfig) })
	}
}

// expectPortForwardRoundTripToWeb2 forwards a local port to port 8080 of member2's web-2 with
// kubeconfig and expects the bytes sent to come back from the pod's echo server.
func expectPortForwardRoundTripToWeb2(t *testing.T, kubeconfig string) {
	k := startKubectl(t, kubeconfig, nil, "port-forward", "--address=127.0.0.1", "pod/web-2", ":8080")
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
	var port string
	require.Eventually(t, func() bool {
		m := forwarding.FindStringSubmatch(k.output())
		if m != nil {
			port = m[1]
		}
		return m != nil
	}, 20*time.Second, 100*time.Millisecond, "%q", k.output())

	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	sent := bytes.Repeat([]byte("round trip through a forwarded port\n"), 1000)
	go func() { _, _ = conn.Write(sent) }()
	got := make([]byte, len(sent))
	_, err = io.ReadFull(conn, got)
	require.NoError(t, err)
	assert.Equal(t, sent, got)
}

func TestCopyIntoAndOutOfAPod(t *testing.T) {
	member2 := testEnv.Member("member2")
	dir := t.TempDir()
	for name, kubeconfig := range map[string]string{"through": kubeconfigs["alice"], "directly": member2.Kubeconfig} {
		content := name + " at " + time.Now().Format(time.RFC3339Nano) + "\n"
		local := filepath.Join(dir, name+".txt")
		require.NoError(t, os.WriteFile(local, []byte(content), 0o600))
		out, code := runKubectl(t, kubeconfig, nil, "cp", local, "web-2:"+name+"-copied.txt")
		require.Equal(t, 0, code, "%s: %s", name, out)
		inPod, err := os.ReadFile(filepath.Join(member2.ExecDir(), name+"-copied.txt"))
		require.NoError(t, err, "%s: the copy is in member2's pod", name)
		assert.Equal(t, content, string(inPod), name)

		back := filepath.Join(dir, name+"-back.txt")
		out, code = runKubectl(t, kubeconfig, nil, "cp", "web-2:"+name+"-copied.txt", back)
		require.Equal(t, 0, code, "%s: %s", name, out)
		got, err := os.ReadFile(back)
		require.NoError(t, err)
		assert.Equal(t, content, string(got), name)
	}
}

// runKubectl runs the real kubectl with kubeconfig and returns its output (stdout then
// stderr) and exit code.
func runKubectl(t *testing.T, kubeconfig string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return stdout.String() + stderr.String(), cmd.ProcessState.ExitCode()
}

// kubectlRun is a kubectl left running, such as logs -f; its stdout is collected.
type kubectlRun struct {
	name string
	mu   sync.Mutex
	out  bytes.Buffer
}

func (k *kubectlRun) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out.Write(p)
}

func (k *kubectlRun) output() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out.String()
}

// startKubectl starts the real kubectl; it is stopped when the test ends.
func startKubectl(t *testing.T, kubeconfig string, env []string, args ...string) *kubectlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	k := &kubectlRun{name: filepath.Base(kubeconfig) + " " + strings.Join(args, " ")}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = k
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return k
}
