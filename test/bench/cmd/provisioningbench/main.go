// Command provisioningbench measures Karmada provisioning in the local environment with the
// real worker and starter: the time from creating a Karmada object to its Ready=True
// condition, for one instance and for several created at once. NodePort instances are used;
// the benchmark plays the kubelet of each API server pod (test/apiserverpod), starting a real
// kube-apiserver with the generated certificates as soon as the cert Secret and the node port
// exist, so every step, including those inside the new control plane, really runs. It prints a
// Markdown report and writes it to .bench/provisioning-report.md; it asserts nothing.
//
//	go run ./test/bench/cmd/provisioningbench
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

type config struct {
	many      int
	timeout   time.Duration
	timeLimit time.Duration
	out       string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.many, "many", 10, "instances created at once in the second measurement")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "how long one measurement may take")
	flag.DurationVar(&cfg.timeLimit, "time-limit", 14*time.Minute, "the whole run is stopped after this")
	flag.StringVar(&cfg.out, "out", "", "report file (default <repo>/.bench/provisioning-report.md)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeLimit)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		log.Print(err)
		stop()
		cancel()
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(root, ".bench", "provisioning-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	runStart := time.Now()
	r := &bench.Report{}
	r.Printf("# karmadaflow Karmada provisioning benchmark\n\n")
	r.Printf("Started %s on %d CPUs, load average %s; processes of other environments or tests: %s.\n",
		runStart.Format(time.RFC3339), runtime.NumCPU(), bench.LoadAverage(), bench.ForeignProcesses())

	e, err := env.Start(ctx, env.Options{Members: 1, Logf: log.Printf})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()
	svc, err := service.Start(ctx, e, service.Options{})
	if err != nil {
		return err
	}
	defer svc.Stop()
	temporal, err := e.Temporal.Dial(ctx)
	if err != nil {
		return err
	}
	defer temporal.Close()
	r.Printf("Environment (host cluster with KWOK, 1 member) and the worker and starter up in %s.\n", bench.FormatDuration(time.Since(runStart)))
	r.Printf("\nEvery instance is `serviceType: NodePort`; the benchmark starts each instance's kube-apiserver (a real one, from bin/) " +
		"as soon as its cert Secret and node port exist, as a kubelet would; the time that API server takes to start is part of " +
		"the measured time and shown apart.\n")

	b := &provisioningBench{env: e, temporal: temporal}
	defer b.stopServers()
	var failures []error
	for _, m := range []struct {
		title string
		ns    string
		n     int
	}{{"One instance", "bench-one", 1}, {fmt.Sprintf("%d instances created at once", cfg.many), "bench-many", cfg.many}} {
		log.Printf("bench: %s", m.title)
		results, wall, err := b.measure(ctx, m.ns, m.n, cfg.timeout)
		r.Heading(2, m.title)
		report(r, results, wall)
		if err != nil {
			r.Printf("\n**Not all instances became Ready**: %v\n", err)
			failures = append(failures, err)
		}
		if m.n == 1 && len(results) == 1 && results[0].err == nil {
			b.stepDurations(ctx, r, m.ns, results[0].name)
		}
	}
	r.Printf("\nRun took %s; load average %s at the end.\n", bench.FormatDuration(time.Since(runStart)), bench.LoadAverage())
	if err := os.WriteFile(cfg.out, []byte(r.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(r.String())
	log.Printf("bench: report written to %s", cfg.out)
	return errors.Join(failures...)
}

type provisioningBench struct {
	env      *env.Env
	temporal client.Client

	mu      sync.Mutex
	servers []*apiserverpod.Server
}

// result is the timeline of one instance, from its creation.
type result struct {
	name      string
	service   time.Duration // the API server Service has its node port
	apiserver time.Duration // the instance's API server answers /readyz
	ready     time.Duration // Ready=True
	err       error
}

// measure creates n instances at once and waits until each is Ready.
func (b *provisioningBench) measure(ctx context.Context, ns string, n int, timeout time.Duration) ([]result, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := b.env.Host.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, 0, err
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { results[i] = b.install(ctx, ns, fmt.Sprintf("k%02d", i)) })
	}
	wg.Wait()
	wall := time.Since(start)
	var errs []error
	for _, res := range results {
		if res.err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", ns, res.name, res.err))
		}
	}
	return results, wall, errors.Join(errs...)
}

// install creates one instance, plays the kubelet of its API server and waits for Ready.
func (b *provisioningBench) install(ctx context.Context, ns, name string) result {
	res := result{name: name}
	k := &operatorv1alpha1.Karmada{
		TypeMeta:   metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}}},
	}
	u, err := kube.ToUnstructured(k)
	if err != nil {
		res.err = err
		return res
	}
	created := time.Now()
	if _, err := b.env.Host.Dynamic().Resource(kube.Karmadas).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		res.err = err
		return res
	}
	names := prov.NamesFor(name)
	var nodePort int32
	res.err = poll(ctx, func() (bool, error) {
		svc, err := b.env.Host.Client().CoreV1().Services(ns).Get(ctx, names.Of(prov.SuffixAPIServer), metav1.GetOptions{})
		if err != nil || len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].NodePort == 0 {
			return false, nil
		}
		nodePort = svc.Spec.Ports[0].NodePort
		return true, nil
	})
	if res.err != nil {
		return res
	}
	res.service = time.Since(created)
	server, err := apiserverpod.Start(ctx, b.env, ns, name, nodePort)
	if err != nil {
		res.err = err
		return res
	}
	b.mu.Lock()
	b.servers = append(b.servers, server)
	b.mu.Unlock()
	res.apiserver = time.Since(created)
	res.err = poll(ctx, func() (bool, error) {
		var got operatorv1alpha1.Karmada
		found, err := kube.Get(ctx, b.env.Host.Dynamic(), kube.Karmadas, ns, name, &got)
		if err != nil || !found {
			return false, err
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, operatorv1alpha1.ConditionReady), nil
	})
	res.ready = time.Since(created)
	return res
}

func poll(ctx context.Context, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *provisioningBench) stopServers() {
	b.mu.Lock()
	defer b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range b.servers {
		wg.Go(s.Stop)
	}
	wg.Wait()
}

func report(r *bench.Report, results []result, wall time.Duration) {
	var ready, service, apiserver []time.Duration
	for _, res := range results {
		if res.err == nil {
			ready, service, apiserver = append(ready, res.ready), append(service, res.service), append(apiserver, res.apiserver)
		}
	}
	row := func(label string, ds []time.Duration) []string {
		s := bench.Summarize(ds)
		if s.N == 0 {
			return []string{label, "0", "-", "-", "-", "-"}
		}
		return []string{label, fmt.Sprint(s.N), bench.FormatDuration(slices.Min(ds)), bench.FormatDuration(s.P50), bench.FormatDuration(s.Max), bench.FormatDuration(s.Mean)}
	}
	r.Table([]string{"from creating the Karmada to", "instances", "min", "p50", "max", "mean"}, [][]string{
		row("API server Service with its node port", service),
		row("its kube-apiserver serving (started by the benchmark)", apiserver),
		row("**Ready=True**", ready),
	})
	r.Printf("\nAll %d created at once; the last became Ready %s after the first was created.\n", len(results), bench.FormatDuration(wall))
}

// stepDurations reports how long each step's activity took, from the workflow history.
func (b *provisioningBench) stepDurations(ctx context.Context, r *bench.Report, ns, name string) {
	iter := b.temporal.GetWorkflowHistory(ctx, wf.WorkflowID(ns, name), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	type step struct {
		name      string
		scheduled time.Time
		took      time.Duration
	}
	var steps []*step
	byID := map[int64]*step{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			r.Printf("\n(history unavailable: %v)\n", err)
			return
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			s := &step{name: a.GetActivityType().GetName(), scheduled: ev.GetEventTime().AsTime()}
			steps, byID[ev.GetEventId()] = append(steps, s), s
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			if s := byID[a.GetScheduledEventId()]; s != nil {
				s.took = ev.GetEventTime().AsTime().Sub(s.scheduled)
			}
		}
	}
	var rows [][]string
	for _, s := range steps {
		rows = append(rows, []string{s.name, bench.FormatDuration(s.took)})
	}
	r.Heading(3, "Steps of the single install (activity scheduled to completed, from its history)")
	r.Table([]string{"activity", "took"}, rows)
}
