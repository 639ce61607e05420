package proxye2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/test/service"
)

// h2Client trusts the proxy and speaks HTTP/2 to it, as kubectl does: an answer sent before
// the request's body is all sent reaches the client.
func h2Client(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(proxyCA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}}
}

// filler is n bytes of 'a', made as they are read.
type filler struct{ left int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	f.left -= n
	return int(n), nil
}

// hugePod is a Pod named name of size bytes in JSON, made as it is read.
func hugePod(name string, size int64) io.Reader {
	head := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default","annotations":{"big":"`
	tail := `"}},"spec":{"containers":[{"name":"app","image":"app:test"}]}}`
	return io.MultiReader(strings.NewReader(head), &filler{left: size - int64(len(head)+len(tail))}, strings.NewReader(tail))
}

// peakMemory is the peak resident memory of process pid so far.
func peakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	peak, err := service.PeakMemory(pid)
	require.NoError(t, err)
	return peak
}

// statusAnswer reads an answer that must be a Status of code.
func statusAnswer(t *testing.T, resp *http.Response, code int) metav1.Status {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, code, resp.StatusCode, "%s", body)
	var s metav1.Status
	require.NoError(t, json.Unmarshal(body, &s), "%s", body)
	assert.Equal(t, "Status", s.Kind)
	return s
}

// TestHugeRequestBodyIsRefused: a 300 MiB PUT through the proxy, with its length declared or
// streamed without one, is answered 413 RequestEntityTooLarge (--proxy-max-request-body-bytes,
// 3 MiB) without the worker reading it into memory: the same worker process serves the next
// request, and its peak memory grew by far less than the body. Before the limit, the worker
// read the whole body and decoded it (a peak of over a GiB).
func TestHugeRequestBodyIsRefused(t *testing.T) {
	const size = 300 << 20
	pid := svc.PID("worker")
	require.NotZero(t, pid, "the worker serving the proxy runs")
	before := peakMemory(t, pid)
	c := h2Client(t)
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared=%v", declared), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, proxyURL+"/api/v1/namespaces/default/pods/web-1", hugePod("web-1", size))
			require.NoError(t, err)
			req.ContentLength = -1
			if declared {
				req.ContentLength = size
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tokens["alice"])
			resp, err := c.Do(req)
			require.NoError(t, err)
			s := statusAnswer(t, resp, http.StatusRequestEntityTooLarge)
			assert.Equal(t, metav1.StatusReasonRequestEntityTooLarge, s.Reason)
			assert.Contains(t, s.Message, "--proxy-max-request-body-bytes")
		})
	}
	assert.Equal(t, pid, svc.PID("worker"), "the worker serving the proxy is the same process")
	out, err := kubectlAs("alice", "get", "pod", "web-1", "-o", "name")
	require.NoError(t, err, out)
	assert.Contains(t, out, "pod/web-1")
	grown := peakMemory(t, pid) - before
	t.Logf("the worker's peak memory grew by %d MiB for two 300 MiB bodies", grown>>20)
	assert.Less(t, grown, int64(100<<20), "the worker's peak memory grew by %d MiB", grown>>20)
}

// TestInFlightLimitsAnswer429: a worker serving the proxy with one request and one
// long-running request in flight at most answers the next of each 429 TooManyRequests with
// Retry-After, which kubectl retries until it is served.
func TestInFlightLimitsAnswer429(t *testing.T) {
	ctx := context.Background()
	base := startProxyWorker(t, "worker-limited", "--proxy-max-requests-inflight=1", "--proxy-max-long-running-requests-inflight=1")
	c := h2Client(t)
	send := func(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tokens["alice"])
		req.Header.Set("Content-Type", "application/json")
		return c.Do(req)
	}
	pods := "/api/v1/namespaces/default/pods"
	require.Eventually(t, func() bool {
		resp, err := send(ctx, http.MethodGet, pods, nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "the limited proxy does not serve")

	// A create in the control plane whose body never ends holds the one slot: it is not
	// answered until released. The GET above may hold the slot a moment longer than its answer
	// takes (the proxy frees it when its handler returns): a hold answered 429 is sent again.
	var release context.CancelFunc
	var held chan *http.Response
	hold := func() {
		var holdCtx context.Context
		holdCtx, release = context.WithCancel(ctx)
		bodyReader, bodyWriter := io.Pipe()
		t.Cleanup(func() { bodyWriter.Close() })
		held = make(chan *http.Response, 1)
		go func() {
			resp, err := send(holdCtx, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", bodyReader)
			if err == nil {
				resp.Body.Close()
			}
			held <- resp
		}()
	}
	for attempt := 1; ; attempt++ {
		hold()
		var resp *http.Response
		select {
		case resp = <-held:
		case <-time.After(time.Second):
		}
		if resp == nil {
			break // held
		}
		release()
		if resp.StatusCode != http.StatusTooManyRequests || attempt == 10 {
			t.Fatalf("the request meant to hold the slot was answered: %v", resp)
		}
	}
	defer func() { release() }()
	expect429 := func(resp *http.Response, what string) {
		t.Helper()
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), what)
		s := statusAnswer(t, resp, http.StatusTooManyRequests)
		assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason, what)
		require.NotNil(t, s.Details, what)
		assert.Equal(t, int32(1), s.Details.RetryAfterSeconds, what)
	}
	var last *http.Response
	require.Eventually(t, func() bool {
		resp, err := send(ctx, http.MethodGet, pods, nil)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusTooManyRequests {
			resp.Body.Close()
			return false
		}
		last = resp
		return true
	}, 30*time.Second, 100*time.Millisecond, "no 429 while the slot is held")
	expect429(last, "a list while the slot is held")

	// Watches have their own slot: one is served meanwhile, a second is refused.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watch, err := send(watchCtx, http.MethodGet, pods+"?watch=true", nil)
	require.NoError(t, err)
	defer watch.Body.Close()
	require.Equal(t, http.StatusOK, watch.StatusCode)
	second, err := send(ctx, http.MethodGet, pods+"?watch=true", nil)
	require.NoError(t, err)
	expect429(second, "a second watch")

	// kubectl retries a 429 after its Retry-After: released while it waits, it is served.
	kubeconfig := filepath.Join(testEnv.Dir, "proxy-alice-limited.kubeconfig")
	config, err := os.ReadFile(kubeconfigs["alice"])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, []byte(strings.Replace(string(config), proxyURL, base, 1)), 0o600))
	begin := time.Now()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-o", "name").CombinedOutput()
		done <- result{string(out), err}
	}()
	time.Sleep(2 * time.Second)
	release()
	<-held
	r := <-done
	require.NoError(t, r.err, r.out)
	assert.Contains(t, r.out, "pod/web-1")
	assert.GreaterOrEqual(t, time.Since(begin), 2*time.Second, "kubectl was served while the slot was held")
}

// startProxyWorker starts one more worker, named instance, serving the proxy on an address of
// its own with the given extra flags, stopped when the test ends; it returns the proxy's base
// URL there.
func startProxyWorker(t *testing.T, instance string, flags ...string) string {
	t.Helper()
	address, err := service.FreeAddress()
	require.NoError(t, err)
	args := append([]string{"--enable-proxy", "--proxy-bind-address", address,
		"--proxy-tls-cert-file", proxyCert, "--proxy-tls-key-file", proxyKey}, flags...)
	require.NoError(t, svc.StartInstance(context.Background(), instance, args))
	t.Cleanup(func() { svc.StopInstance(instance) })
	u, err := url.Parse(proxyURL)
	require.NoError(t, err)
	u.Host = address
	return u.String()
}
