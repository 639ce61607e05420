package proxye2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// processFigures are a process's CPU time (user+system, in clock ticks) and threads, for logs.
func processFigures(pid int) (cpuTicks int64, threads string) {
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			f := strings.Fields(string(stat)[i+1:])
			if len(f) > 13 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				s, _ := strconv.ParseInt(f[12], 10, 64)
				cpuTicks = u + s
			}
		}
	}
	if file, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		defer file.Close()
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
				threads = strings.TrimSpace(v)
			}
		}
	}
	return cpuTicks, threads
}

// TestManyWatchesOfOneCaller: one caller opening 200 watches through a worker with the default
// limits gets the first proxy.DefaultMaxLongRunningRequestsPerCaller of them streaming and the
// others answered 429 with Retry-After and a Status naming the flag; meanwhile another caller's
// list and watch are served; once the watches are closed the caller's slots come back.
func TestManyWatchesOfOneCaller(t *testing.T) {
	ctx := context.Background()
	const instance = "worker-many-watches"
	base := startProxyWorker(t, instance)
	c := h2Client(t)
	send := func(ctx context.Context, caller, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tokens[caller])
		return c.Do(req)
	}
	alicePods := "/api/v1/namespaces/default/pods"
	bobPods := "/api/v1/namespaces/" + bobNamespace + "/pods"
	require.Eventually(t, func() bool {
		resp, err := send(ctx, "alice", alicePods)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "the proxy does not serve")
	pid := svc.PID(instance)
	cpu0, threads0 := processFigures(pid)

	const watches = 200
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	type answer struct {
		resp *http.Response
		err  error
	}
	answers := make(chan answer, watches)
	var wg sync.WaitGroup
	for range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := send(watchCtx, "alice", alicePods+"?watch=true")
			answers <- answer{resp, err}
		}()
	}
	wg.Wait()
	close(answers)
	var streaming []*http.Response
	refused := 0
	for a := range answers {
		require.NoError(t, a.err)
		switch a.resp.StatusCode {
		case http.StatusOK:
			streaming = append(streaming, a.resp)
		case http.StatusTooManyRequests:
			refused++
			assert.Equal(t, "1", a.resp.Header.Get("Retry-After"))
			s := statusAnswer(t, a.resp, http.StatusTooManyRequests)
			assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason)
			assert.Contains(t, s.Message, "--proxy-max-long-running-requests-per-caller")
		default:
			s := statusAnswer(t, a.resp, a.resp.StatusCode)
			t.Errorf("a watch was answered %d: %s", a.resp.StatusCode, s.Message)
		}
	}
	cpu1, threads1 := processFigures(pid)
	t.Logf("200 watches of alice: %d streaming, %d refused; the worker: %d CPU ticks and %s threads before, %d and %s with them open",
		len(streaming), refused, cpu0, threads0, cpu1, threads1)
	assert.Equal(t, proxy.DefaultMaxLongRunningRequestsPerCaller, len(streaming))
	assert.Equal(t, watches-proxy.DefaultMaxLongRunningRequestsPerCaller, refused)

	// Another caller is served meanwhile: a list, and a watch that streams.
	resp, err := send(ctx, "bob", bobPods)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "bob's list")
	bobCtx, stopBob := context.WithCancel(ctx)
	bobWatch, err := send(bobCtx, "bob", bobPods+"?watch=true")
	require.NoError(t, err)
	// The fixture lets bob list pods in his namespace but not watch them in every member: his
	// watch is answered by the members (403 Forbidden there), never refused by the proxy's limit.
	assert.NotEqual(t, http.StatusTooManyRequests, bobWatch.StatusCode, "bob's watch")
	if bobWatch.StatusCode != http.StatusOK {
		s := statusAnswer(t, bobWatch, bobWatch.StatusCode)
		assert.NotContains(t, s.Message, "--proxy-max")
		t.Logf("bob's watch: %d %s", bobWatch.StatusCode, s.Message)
	}
	stopBob()
	bobWatch.Body.Close()
	out, err := kubectlAs("bob", "get", "pods", "-n", bobNamespace, "-o", "name")
	require.NoError(t, err, out)

	// The watches stay open across a membership check of the proxy.
	time.Sleep(3 * time.Second)
	cpu2, _ := processFigures(pid)
	t.Logf("the worker spent %d CPU ticks in 3 s with %d watches open", cpu2-cpu1, len(streaming))

	stopWatches()
	for _, r := range streaming {
		r.Body.Close()
	}
	require.Eventually(t, func() bool {
		resp, err := send(ctx, "alice", alicePods+"?watch=true&timeoutSeconds=1")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "alice's slots did not come back")
	// All of them: as many watches as one caller may are served again (closed streams may take
	// a moment to end in the worker: a refused one is tried again).
	again, stopAgain := context.WithCancel(ctx)
	defer stopAgain()
	served := 0
	deadline := time.Now().Add(30 * time.Second)
	for served < proxy.DefaultMaxLongRunningRequestsPerCaller && time.Now().Before(deadline) {
		codes := make(chan int, proxy.DefaultMaxLongRunningRequestsPerCaller)
		var wg sync.WaitGroup
		for range proxy.DefaultMaxLongRunningRequestsPerCaller - served {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := send(again, "alice", alicePods+"?watch=true")
				if err != nil {
					codes <- 0
					return
				}
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
				}
				codes <- resp.StatusCode
			}()
		}
		wg.Wait()
		close(codes)
		for code := range codes {
			if code == http.StatusOK {
				served++
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopAgain()
	assert.Equal(t, proxy.DefaultMaxLongRunningRequestsPerCaller, served, "every slot came back")
	cpu3, threads3 := processFigures(pid)
	t.Logf("the worker after: %d CPU ticks, %s threads", cpu3, threads3)
}
