// Command proxybench measures the global resource proxy against the local environment with
// the real worker: listing 3 members x N pods through the proxy against listing 3N pods
// directly on one API server (JSON, Table and pages of 500), the delivery latency of watch
// events through the proxy against a direct watch, and exec and port-forward of a member pod
// through the proxy against the member directly (round trips and throughput), and the
// MultiClusterService latency and a known caller's latency without and during a flood of bad
// bearer tokens (flood.go), and the first request of callers new to the proxy without and during
// a flood from another source address (newcallers.go). It prints a Markdown report and writes it to
// .bench/proxy-report.md; it asserts nothing.
//
//	go run ./test/bench/cmd/proxybench
//	go run ./test/bench/cmd/proxybench -flood-only         # the token flood alone
//	go run ./test/bench/cmd/proxybench -new-callers-only   # new callers during a flood from one source
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

const (
	namespace  = "bench"
	warmUps    = 3 // requests or messages not measured before those that are
	tableAccpt = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
)

func main() {
	pods := flag.Int("pods", 1000, "pods in each of the 3 proxied members (the direct cluster holds 3x)")
	rounds := flag.Int("rounds", 40, "lists measured per kind")
	events := flag.Int("events", 100, "watch events measured")
	var sizes streamSizes
	flag.IntVar(&sizes.execs, "execs", 50, "exec round trips measured per protocol")
	flag.IntVar(&sizes.messages, "messages", 200, "small messages echoed over each open exec or port-forward stream")
	mib := flag.Int("mib", 16, "MiB pushed through each open exec or port-forward stream")
	var flood floodOptions
	flag.IntVar(&flood.rate, "flood-rate", 200, "random bad bearer tokens sent to the proxy a second during the token flood")
	flag.IntVar(&flood.updates, "flood-updates", 200, "EndpointSlice changes measured in each token-flood phase")
	flag.DurationVar(&flood.interval, "flood-interval", 100*time.Millisecond, "time between two EndpointSlice changes of the token flood")
	floodOnly := flag.Bool("flood-only", false, "measure the token flood alone: no pods, lists, watches or streams")
	newCallers := flag.Int("new-callers", 50, "callers new to the proxy measured in each phase of the flood from one source")
	newCallersOnly := flag.Bool("new-callers-only", false, "measure the new callers during a flood from one source alone")
	flag.Parse()
	sizes.bytes = *mib << 20
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if *floodOnly || *newCallersOnly {
		*pods = 0
	}
	only := ""
	switch {
	case *newCallersOnly:
		only = "new-callers"
	case *floodOnly:
		only = "flood"
	}
	if err := run(ctx, *pods, *rounds, *events, sizes, flood, *newCallers, only); err != nil {
		log.Fatal(err)
	}
}

// run measures everything, or only the token flood (only "flood") or the new callers during a
// flood from one source (only "new-callers").
func run(ctx context.Context, pods, rounds, events int, sizes streamSizes, flood floodOptions, newCallers int, only string) error {
	runStart := time.Now()
	machine := fmt.Sprintf("Started %s on %d CPUs, load average %s; processes of other environments or tests: %s.",
		runStart.Format(time.RFC3339), runtime.NumCPU(), bench.LoadAverage(), bench.ForeignProcesses())
	e, err := env.Start(ctx, env.Options{Members: 4, Logf: log.Printf})
	if err != nil {
		return err
	}
	defer e.Stop()
	address, err := service.FreeAddress()
	if err != nil {
		return err
	}
	files, err := e.WriteProxyFiles(address)
	if err != nil {
		return err
	}
	svc, err := service.Start(ctx, e, service.Options{
		WorkerArgs: []string{
			"--enable-proxy", "--proxy-bind-address", address, "--proxy-tls-cert-file", files.CertFile, "--proxy-tls-key-file", files.KeyFile,
			"--enable-cluster-health=false", "--kube-api-qps", "500", "--kube-api-burst", "1000",
		},
		// As mcsbench's, for the token flood's MultiClusterService latency.
		StarterArgs: []string{"--enable-cluster-health=false", "--trigger-workers", "16", "--kube-api-qps", "500", "--kube-api-burst", "1000"},
		ChartValues: []string{"proxy.enabled=true", "proxy.tls.existingSecret=proxy-serving"}, // the proxy's impersonation (the chart requires a certificate; the worker is given files)
	})
	if err != nil {
		return err
	}
	defer svc.Stop()

	proxied := []*env.Cluster{e.Member("member1"), e.Member("member2"), e.Member("member3")}
	single := e.Member("member4")
	log.Printf("creating %d pods in each of member1..3 and %d in member4", pods, 3*pods)
	for _, c := range proxied {
		if err := createPods(ctx, c.Client(), pods, c.Name); err != nil {
			return err
		}
	}
	if err := createPods(ctx, single.Client(), 3*pods, "single"); err != nil {
		return err
	}
	if err := register(ctx, e); err != nil {
		return err
	}

	// The control plane's admin, through the proxy.
	proxyConfig, err := clientcmd.BuildConfigFromFlags("", files.Kubeconfig)
	if err != nil {
		return err
	}
	proxyTLS, err := rest.TLSConfigFor(proxyConfig)
	if err != nil {
		return err
	}
	proxyClient := &http.Client{Transport: &http.Transport{TLSClientConfig: proxyTLS, MaxIdleConnsPerHost: 4}}
	through := func(path, accept string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, files.URL+path, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+proxyConfig.BearerToken)
			req.Header.Set("Accept", accept)
		}
		return req, err
	}
	// The proxy has the registry once it lists every pod.
	if err := waitForCount(ctx, proxyClient, through, 3*pods); err != nil {
		return err
	}

	var report strings.Builder
	fmt.Fprintf(&report, "# karmadaflow proxy benchmark\n\n%s\n", machine)
	if only == "" {
		if err := measureProxy(ctx, &report, proxied[0], single, proxyConfig, proxyClient, through, pods, rounds, events, sizes); err != nil {
			return err
		}
	}
	if only != "new-callers" {
		b, err := bench.New(e, svc, log.Printf)
		if err != nil {
			return err
		}
		defer b.Close()
		if err := measureTokenFlood(ctx, &report, b, files.URL, proxyTLS, proxyConfig.BearerToken, flood); err != nil {
			return err
		}
	}
	if only != "flood" {
		if err := measureNewCallers(ctx, &report, e, files.URL, proxyTLS, flood.rate, newCallers); err != nil {
			return err
		}
	}
	fmt.Fprintf(&report, "\nRun took %s; load average %s at the end.\n", bench.FormatDuration(time.Since(runStart)), bench.LoadAverage())

	fmt.Print(report.String())
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	out := filepath.Join(root, ".bench", "proxy-report.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	log.Printf("report written to %s", out)
	return os.WriteFile(out, []byte(report.String()), 0o644)
}

// measureProxy reports the lists through the proxy against single directly, the watch and
// exec and port-forward through the proxy against member1 directly.
func measureProxy(ctx context.Context, report io.Writer, member1, single *env.Cluster, proxyConfig *rest.Config, proxyClient *http.Client, through newRequest,
	pods, rounds, events int, sizes streamSizes) error {
	directTransport, err := rest.TransportFor(single.RESTConfig)
	if err != nil {
		return err
	}
	directClient := &http.Client{Transport: directTransport}
	directly := func(path, accept string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, single.Server+path, nil)
		if err == nil {
			req.Header.Set("Accept", accept)
		}
		return req, err
	}
	fmt.Fprintf(report, "\n%d pods in each of 3 members through the proxy, against %d pods on one API server directly; %d lists of each kind, after %d warm-up lists. Latency is the whole request: sent until the body is read.\n\n", pods, 3*pods, rounds, warmUps)
	latencyHeader(report, "list")
	for _, kind := range []struct {
		name, path, accept string
		paged              bool
	}{
		{"JSON", "/api/v1/pods", "application/json", false},
		{"Table (kubectl get)", "/api/v1/pods", tableAccpt, false},
		{"JSON, pages of 500", "/api/v1/pods?limit=500", "application/json", true},
	} {
		d, err := measureList(proxyClient, directClient, directly, kind.path, kind.accept, kind.paged, rounds, false)
		if err != nil {
			return fmt.Errorf("direct %s: %w", kind.name, err)
		}
		p, err := measureList(proxyClient, directClient, through, kind.path, kind.accept, kind.paged, rounds, true)
		if err != nil {
			return fmt.Errorf("proxy %s: %w", kind.name, err)
		}
		latencyRow(report, kind.name, d, p)
	}

	d, p, err := measureWatch(ctx, member1, proxyClient, through, events)
	if err != nil {
		return err
	}
	fmt.Fprintf(report, "\nWatch: %d pod label changes in member1, 50 ms apart; latency from just before the write to the event read by a watch on member1 directly and by a watch through the proxy.\n\n", events)
	fmt.Fprintf(report, "| watch | p50 | p90 | p99 | max |\n|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		s    bench.Summary
	}{{"direct (member1)", bench.Summarize(d)}, {"through the proxy", bench.Summarize(p)}} {
		fmt.Fprintf(report, "| %s | %s | %s | %s | %s |\n", row.name, ms(row.s.P50), ms(row.s.P90), ms(row.s.P99), ms(row.s.Max))
	}
	if err := measureStreams(ctx, report, member1, proxyConfig, sizes); err != nil {
		return err
	}
	return nil
}

func createPods(ctx context.Context, c kubernetes.Interface, n int, prefix string) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	work := make(chan int)
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		go func() {
			var first error
			for i := range work {
				// Pending for want of a node with the bench's label: no kubelet or KWOK churns them,
				// and unlike pods bound to a missing node the pod garbage collector leaves them.
				_, err := c.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i), Labels: map[string]string{"app": "bench", "index": fmt.Sprint(i)}},
					Spec: corev1.PodSpec{NodeSelector: map[string]string{"karmadaflow.io/bench": "nowhere"}, Containers: []corev1.Container{{
						Name: "app", Image: "registry.example/app:1.0", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
						Env: []corev1.EnvVar{{Name: "MODE", Value: "bench"}},
					}}},
				}, metav1.CreateOptions{})
				if err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	for w := 0; w < 16; w++ {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

func register(ctx context.Context, e *env.Env) error {
	registry := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "search.karmada.io/v1alpha1", "kind": "ResourceRegistry",
		"metadata": map[string]any{"name": "bench-pods"},
		"spec": map[string]any{
			"targetCluster":     map[string]any{"clusterNames": []any{"member1", "member2", "member3"}},
			"resourceSelectors": []any{map[string]any{"apiVersion": "v1", "kind": "Pod"}},
		},
	}}
	_, err := e.ControlPlane.Dynamic().Resource(kube.ResourceRegistries).Create(ctx, registry, metav1.CreateOptions{})
	return err
}

type newRequest func(path, accept string) (*http.Request, error)

func waitForCount(ctx context.Context, c *http.Client, through newRequest, want int) error {
	for {
		n, _, err := list(c, through, "/api/v1/pods", "application/json")
		if err == nil && n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy never listed %d pods (last %d, %v)", want, n, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// list does one request and returns the number of items (or rows) and the continue token.
func list(c *http.Client, newReq newRequest, path, accept string) (int, string, error) {
	req, err := newReq(path, accept)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("%s: %d %s", path, resp.StatusCode, data)
	}
	var body struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return 0, "", err
	}
	return len(body.Items) + len(body.Rows), body.Metadata.Continue, nil
}

func measureList(proxyClient, directClient *http.Client, newReq newRequest, path, accept string, paged bool, rounds int, viaProxy bool) ([]time.Duration, error) {
	c := directClient
	if viaProxy {
		c = proxyClient
	}
	var out []time.Duration
	for i := 0; i < rounds+warmUps; i++ {
		begin := time.Now()
		p := path
		for {
			_, next, err := list(c, newReq, p, accept)
			if err != nil {
				return nil, err
			}
			if !paged || next == "" {
				break
			}
			p = path + "&continue=" + next
		}
		if i >= warmUps {
			out = append(out, time.Since(begin))
		}
	}
	return out, nil
}

// measureWatch changes a pod's label in member1 events times and measures when a direct
// watch and a watch through the proxy see each change.
func measureWatch(ctx context.Context, member *env.Cluster, proxyClient *http.Client, through newRequest, events int) ([]time.Duration, []time.Duration, error) {
	memberTransport, err := rest.TransportFor(member.RESTConfig)
	if err != nil {
		return nil, nil, err
	}
	directClient := &http.Client{Transport: memberTransport}
	name := "member1-00000"
	path := "/api/v1/namespaces/" + namespace + "/pods?watch=true&fieldSelector=metadata.name%3D" + name
	direct := func(path, accept string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, member.Server+path, nil)
		if err == nil {
			req.Header.Set("Accept", accept)
		}
		return req, err
	}
	directSeen, err := watchLabels(directClient, direct, path)
	if err != nil {
		return nil, nil, err
	}
	proxySeen, err := watchLabels(proxyClient, through, path)
	if err != nil {
		return nil, nil, err
	}
	time.Sleep(time.Second) // both watches have delivered the pod's current state
	written := map[string]time.Time{}
	pods := member.Client().CoreV1().Pods(namespace)
	for i := 0; i < events; i++ {
		value := fmt.Sprintf("v%d", i)
		patch := []byte(`{"metadata":{"labels":{"step":"` + value + `"}}}`)
		written[value] = time.Now()
		if _, err := pods.Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			return nil, nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	return latencies(written, directSeen.snapshot()), latencies(written, proxySeen.snapshot()), nil
}

type seenLabels struct {
	ch chan map[string]time.Time
}

func (s seenLabels) snapshot() map[string]time.Time { return <-s.ch }

// watchLabels reads a watch stream and records when each value of the "step" label was seen;
// snapshot returns what was seen so far.
func watchLabels(c *http.Client, newReq newRequest, path string) (seenLabels, error) {
	req, err := newReq(path, "application/json")
	if err != nil {
		return seenLabels{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return seenLabels{}, err
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return seenLabels{}, fmt.Errorf("watch %s: %d %s", path, resp.StatusCode, data)
	}
	s := seenLabels{ch: make(chan map[string]time.Time)}
	events := make(chan string)
	go func() {
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var e struct {
				Object struct {
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if dec.Decode(&e) != nil {
				close(events)
				return
			}
			events <- e.Object.Metadata.Labels["step"]
		}
	}()
	go func() {
		seen := map[string]time.Time{}
		for {
			select {
			case v, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				if _, dup := seen[v]; !dup {
					seen[v] = time.Now()
				}
			case s.ch <- copyMap(seen):
			}
		}
	}()
	return s, nil
}

func copyMap(m map[string]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func latencies(written, seen map[string]time.Time) []time.Duration {
	var out []time.Duration
	for v, at := range written {
		if s, ok := seen[v]; ok {
			out = append(out, s.Sub(at))
		}
	}
	return out
}

// latencyHeader starts a table of latencies directly and through the proxy, one kind of
// request a row (latencyRow).
func latencyHeader(report io.Writer, kind string) {
	fmt.Fprintf(report, "| %s | direct p50 | direct p99 | proxy p50 | proxy p99 | ratio p50 | ratio p99 |\n|---|---|---|---|---|---|---|\n", kind)
}

func latencyRow(report io.Writer, name string, direct, proxy []time.Duration) {
	d, p := bench.Summarize(direct), bench.Summarize(proxy)
	fmt.Fprintf(report, "| %s | %s | %s | %s | %s | %.2fx | %.2fx |\n", name, ms(d.P50), ms(d.P99), ms(p.P50), ms(p.P99),
		float64(p.P50)/float64(d.P50), float64(p.P99)/float64(d.P99))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
