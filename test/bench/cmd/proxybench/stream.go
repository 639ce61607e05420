package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// Exec and port-forward of a pod in member1, directly and through the proxy, over both
// protocols client-go speaks: WebSocket (kubectl's first choice) and SPDY (its fallback),
// each asked for alone. KWOK runs exec'd commands on this machine and forwards every pod
// port to the environment's TCP echo server.

const (
	streamPod   = "stream-target"
	messageSize = 64
)

type streamSizes struct {
	execs    int // exec round trips per protocol and side
	messages int // small messages echoed per stream
	bytes    int // bytes pushed through each stream for its throughput
}

// side is where a client sends its requests: the member directly, or the proxy.
type side struct {
	cfg    *rest.Config
	client kubernetes.Interface
}

func newSide(cfg *rest.Config) (side, error) {
	client, err := kubernetes.NewForConfig(cfg)
	return side{cfg: cfg, client: client}, err
}

// podURL is the URL of the stream pod's subresource with opts as its query, as kubectl
// builds it.
func (s side) podURL(subresource string, opts runtime.Object) *url.URL {
	return s.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(streamPod).
		SubResource(subresource).VersionedParams(opts, scheme.ParameterCodec).URL()
}

func (s side) executor(websocket bool, command []string, stdin bool) (remotecommand.Executor, error) {
	u := s.podURL("exec", &corev1.PodExecOptions{Container: "app", Command: command, Stdin: stdin, Stdout: true})
	if websocket {
		return remotecommand.NewWebSocketExecutor(s.cfg, http.MethodGet, u.String())
	}
	return remotecommand.NewSPDYExecutor(s.cfg, http.MethodPost, u)
}

func (s side) dialer(websocket bool) (httpstream.Dialer, error) {
	u := s.podURL("portforward", &corev1.PodPortForwardOptions{})
	if websocket {
		return portforward.NewSPDYOverWebsocketDialer(u, s.cfg)
	}
	transport, upgrader, err := spdy.RoundTripperFor(s.cfg)
	if err != nil {
		return nil, err
	}
	return spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), nil
}

// streamFigures are one side's measurements over one protocol.
type streamFigures struct {
	exec                  []time.Duration // whole exec round trips
	execEcho, forwardEcho []time.Duration // small message round trips over one open stream
	execMBps, forwardMBps float64
}

// measureStreams measures exec and port-forward of a pod in member1, directly and through
// the proxy, and writes their tables into report.
func measureStreams(ctx context.Context, report io.Writer, member *env.Cluster, proxyConfig *rest.Config, sizes streamSizes) error {
	if err := startStreamPod(ctx, member.Client()); err != nil {
		return err
	}
	direct, err := newSide(member.RESTConfig)
	if err != nil {
		return err
	}
	proxy, err := newSide(proxyConfig)
	if err != nil {
		return err
	}
	protocols := []struct {
		name      string
		websocket bool
	}{{"WebSocket", true}, {"SPDY", false}}
	type row struct {
		name          string
		direct, proxy streamFigures
	}
	var rows []row
	for _, p := range protocols {
		r := row{name: p.name}
		if r.direct, err = measureSide(ctx, direct, p.websocket, sizes); err != nil {
			return fmt.Errorf("%s directly: %w", p.name, err)
		}
		if r.proxy, err = measureSide(ctx, proxy, p.websocket, sizes); err != nil {
			return fmt.Errorf("%s through the proxy: %w", p.name, err)
		}
		rows = append(rows, r)
	}

	fmt.Fprintf(report, "\nExec: %d round trips of `echo ok` in a pod of member1 per protocol, directly and through the proxy: each from the upgrade request until the command's exit is read, after %d warm-up runs; through the proxy, each first finds the pod's member (a GET in each of member1..3). Each protocol alone, without kubectl's fallback from WebSocket to SPDY.\n\n", sizes.execs, warmUps)
	latencyHeader(report, "exec")
	for _, r := range rows {
		latencyRow(report, r.name, r.direct.exec, r.proxy.exec)
	}
	fmt.Fprintf(report, "\nOne open stream: an exec of `stdbuf -o0 head -c` (its stdin echoed to its stdout) and a port-forward to the pod's port 8080 (KWOK forwards it to a TCP echo server on 127.0.0.1), as kubectl port-forward does it: through a local port. %d messages of %d bytes after %d warm-up ones, each written once the previous one is back, then %d MiB written while read back.\n\n", sizes.messages, messageSize, warmUps, sizes.bytes>>20)
	latencyHeader(report, fmt.Sprintf("%d-byte round trip", messageSize))
	for _, r := range rows {
		latencyRow(report, "exec, "+r.name, r.direct.execEcho, r.proxy.execEcho)
		latencyRow(report, "port-forward, "+r.name, r.direct.forwardEcho, r.proxy.forwardEcho)
	}
	fmt.Fprintf(report, "\n| throughput | direct | proxy | proxy/direct |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(report, "| exec, %s | %.1f MB/s | %.1f MB/s | %.2fx |\n", r.name, r.direct.execMBps, r.proxy.execMBps, r.proxy.execMBps/r.direct.execMBps)
		fmt.Fprintf(report, "| port-forward, %s | %.1f MB/s | %.1f MB/s | %.2fx |\n", r.name, r.direct.forwardMBps, r.proxy.forwardMBps, r.proxy.forwardMBps/r.direct.forwardMBps)
	}
	return nil
}

// startStreamPod creates the pod the streams reach in member1 and waits until KWOK runs it.
func startStreamPod(ctx context.Context, c kubernetes.Interface) error {
	_, err := c.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: streamPod},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1.0", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := c.CoreV1().Pods(namespace).Get(ctx, streamPod, metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, nil
	})
}

func measureSide(ctx context.Context, s side, websocket bool, sizes streamSizes) (streamFigures, error) {
	var f streamFigures
	var err error
	if f.exec, err = execRoundTrips(ctx, s, websocket, sizes.execs); err != nil {
		return f, fmt.Errorf("exec: %w", err)
	}
	if f.execEcho, f.execMBps, err = execEcho(ctx, s, websocket, sizes); err != nil {
		return f, fmt.Errorf("exec stream: %w", err)
	}
	if f.forwardEcho, f.forwardMBps, err = forwardEcho(ctx, s, websocket, sizes); err != nil {
		return f, fmt.Errorf("port-forward: %w", err)
	}
	return f, nil
}

// execRoundTrips runs `echo ok` n times, after warm-up runs, and times each.
func execRoundTrips(ctx context.Context, s side, websocket bool, n int) ([]time.Duration, error) {
	ex, err := s.executor(websocket, []string{"echo", "ok"}, false)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := 0; i < n+warmUps; i++ {
		var stdout bytes.Buffer
		begin := time.Now()
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout}); err != nil {
			return nil, err
		}
		if i >= warmUps {
			out = append(out, time.Since(begin))
		}
		if stdout.String() != "ok\n" {
			return nil, fmt.Errorf("echo ok printed %q", stdout.String())
		}
	}
	return out, nil
}

// execEcho echoes through the stdin and stdout of one exec of `head -c`, which ends once
// every byte has passed: KWOK v0.8.0 never closes a command's stdin, so cat would not. Its
// output is unbuffered (stdbuf -o0) so that each message comes back at once.
func execEcho(ctx context.Context, s side, websocket bool, sizes streamSizes) ([]time.Duration, float64, error) {
	total := fmt.Sprint((warmUps+sizes.messages)*messageSize + sizes.bytes)
	ex, err := s.executor(websocket, []string{"stdbuf", "-o0", "head", "-c", total}, true)
	if err != nil {
		return nil, 0, err
	}
	stdinReader, stdin := io.Pipe()
	stdout, stdoutWriter := io.Pipe()
	defer stdin.Close()
	done := make(chan error, 1)
	go func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinReader, Stdout: stdoutWriter})
		stdoutWriter.CloseWithError(err)
		done <- err
	}()
	echo := struct {
		io.Reader
		io.Writer
	}{stdout, stdin}
	latencies, mbps, err := echoFigures(echo, sizes)
	if err != nil {
		return nil, 0, err
	}
	return latencies, mbps, <-done
}

// forwardEcho echoes through one connection to a port forwarded to the pod's port 8080.
func forwardEcho(ctx context.Context, s side, websocket bool, sizes streamSizes) ([]time.Duration, float64, error) {
	dialer, err := s.dialer(websocket)
	if err != nil {
		return nil, 0, err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var errOut strings.Builder
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, &errOut)
	if err != nil {
		return nil, 0, err
	}
	forwarding := make(chan error, 1)
	go func() { forwarding <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-forwarding:
		return nil, 0, fmt.Errorf("forwarding: %v %s", err, errOut.String())
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil {
		return nil, 0, err
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	return echoFigures(conn, sizes)
}

// echoFigures measures an echo stream: the round trips of small messages, one at a time
// after warm-up ones, then MB/s while sizes.bytes are written and read back at once.
func echoFigures(echo io.ReadWriter, sizes streamSizes) ([]time.Duration, float64, error) {
	message := bytes.Repeat([]byte{'m'}, messageSize)
	back := make([]byte, messageSize)
	var latencies []time.Duration
	for i := 0; i < warmUps+sizes.messages; i++ {
		begin := time.Now()
		if _, err := echo.Write(message); err != nil {
			return nil, 0, err
		}
		if _, err := io.ReadFull(echo, back); err != nil {
			return nil, 0, err
		}
		if i >= warmUps {
			latencies = append(latencies, time.Since(begin))
		}
	}
	payload := make([]byte, sizes.bytes)
	begin := time.Now()
	written := make(chan error, 1)
	go func() {
		_, err := echo.Write(payload)
		written <- err
	}()
	if _, err := io.CopyN(io.Discard, echo, int64(sizes.bytes)); err != nil {
		return nil, 0, err
	}
	elapsed := time.Since(begin)
	if err := <-written; err != nil {
		return nil, 0, err
	}
	return latencies, float64(sizes.bytes) / 1e6 / elapsed.Seconds(), nil
}
