// Package bench measures karmadaflow against the real local environment (test/env) with the
// real worker and starter (test/service): how fast an EndpointSlice change reaches the
// consumers (also beside a real Karmada, while a worker crashes or Temporal is killed, and
// during a token flood of the proxy), how fast many MultiClusterServices converge from a cold
// start, what a member's Ready flaps cost them, and what the service and its workflow
// histories weigh afterwards. It also holds what the programs of cmd/ share: CPU and load
// readings, sample summaries and the Markdown report. It asserts nothing.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// ManagedBy marks the EndpointSlices the benchmark writes by hand in the provider.
const ManagedBy = "bench.karmadaflow.io"

// Port of the benchmark's Services and slices.
const (
	portName   = "http"
	port       = 80
	targetPort = 8080
)

// Bench is a running environment and service, with clients fast enough to write hundreds of
// objects without client-side throttling.
type Bench struct {
	Env     *env.Env
	Service *service.Service
	Logf    func(format string, args ...any)

	clients map[string]clients // by cluster name (the control plane is env.ControlPlaneName)

	temporalOnce sync.Once
	temporal     client.Client
	temporalErr  error

	health   clusterHealth
	phasesMu sync.Mutex
	phases   []phase
}

type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

// New prepares clients for every cluster of e.
func New(e *env.Env, svc *service.Service, logf func(format string, args ...any)) (*Bench, error) {
	b := &Bench{Env: e, Service: svc, Logf: logf, clients: map[string]clients{}}
	for _, c := range append([]*env.Cluster{e.ControlPlane}, e.Members...) {
		cfg := rest.CopyConfig(c.RESTConfig)
		cfg.QPS, cfg.Burst = 2000, 4000
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("client for cluster %s: %w", c.Name, err)
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("dynamic client for cluster %s: %w", c.Name, err)
		}
		b.clients[c.Name] = clients{kube: kube, dynamic: dyn}
	}
	return b, nil
}

// Close releases the Temporal client.
func (b *Bench) Close() {
	if b.temporal != nil {
		b.temporal.Close()
	}
}

func (b *Bench) kube(cluster string) kubernetes.Interface { return b.clients[cluster].kube }

func (b *Bench) controlPlane() dynamic.Interface { return b.clients[env.ControlPlaneName].dynamic }

// Temporal is an SDK client of the environment's Temporal (its logs discarded).
func (b *Bench) Temporal() (client.Client, error) {
	b.temporalOnce.Do(func() {
		b.temporal, b.temporalErr = b.Env.Temporal.Dial(context.Background())
	})
	return b.temporal, b.temporalErr
}

// ensureNamespace creates namespace in the control plane and every member.
func (b *Bench) ensureNamespace(ctx context.Context, namespace string) error {
	for name, c := range b.clients {
		_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s in cluster %s: %w", namespace, name, err)
		}
	}
	return nil
}

// createService creates a selector-less Service (no controller writes slices for it, the
// benchmark does) in cluster.
func (b *Bench) createService(ctx context.Context, cluster, namespace, name string) error {
	_, err := b.kube(cluster).CoreV1().Services(namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: portName, Port: port, TargetPort: intstr.FromInt32(targetPort), Protocol: corev1.ProtocolTCP,
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Service %s/%s in cluster %s: %w", namespace, name, cluster, err)
	}
	return nil
}

// createSlice writes an EndpointSlice of service with one ready endpoint at address.
func (b *Bench) createSlice(ctx context.Context, cluster, namespace, name, service, address string) error {
	ready := true
	_, err := b.kube(cluster).DiscoveryV1().EndpointSlices(namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
			networkingv1alpha1.LabelServiceName:            service,
			networkingv1alpha1.LabelEndpointSliceManagedBy: ManagedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{address}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr(portName), Port: ptr(int32(targetPort)), Protocol: ptr(corev1.ProtocolTCP),
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating EndpointSlice %s/%s in cluster %s: %w", namespace, name, cluster, err)
	}
	return nil
}

// setSliceAddress replaces the slice's endpoints by one ready endpoint at address.
func (b *Bench) setSliceAddress(ctx context.Context, cluster, namespace, name, address string) error {
	patch, err := json.Marshal(map[string]any{"endpoints": []any{map[string]any{
		"addresses": []string{address}, "conditions": map[string]any{"ready": true},
	}}})
	if err != nil {
		return err
	}
	_, err = b.kube(cluster).DiscoveryV1().EndpointSlices(namespace).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("updating EndpointSlice %s/%s in cluster %s: %w", namespace, name, cluster, err)
	}
	return nil
}

// createMCS creates a CrossCluster MultiClusterService in the control plane.
func (b *Bench) createMCS(ctx context.Context, namespace, name string, providers, consumers []string) error {
	selectors := func(names []string) []any {
		var out []any
		for _, n := range names {
			out = append(out, map[string]any{"name": n})
		}
		return out
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": networkingv1alpha1.GroupVersion.String(), "kind": networkingv1alpha1.KindMultiClusterService,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"types":            []any{string(networkingv1alpha1.ExposureTypeCrossCluster)},
			"providerClusters": selectors(providers),
			"consumerClusters": selectors(consumers),
		},
	}}
	_, err := b.controlPlane().Resource(networkingv1alpha1.MultiClusterServiceGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating MultiClusterService %s/%s: %w", namespace, name, err)
	}
	return nil
}

// parallel calls do(i) for i in [0, n) on workers goroutines and returns the errors joined
// (at most the first 10, plus how many more there were).
func parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	next := make(chan int)
	var mu sync.Mutex
	var errs []error
	failed := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					mu.Lock()
					failed++
					if len(errs) < 10 {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if failed > len(errs) {
		errs = append(errs, fmt.Errorf("... and %d more failures", failed-len(errs)))
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// workflowState is what a workflow's state query answers, as indented JSON.
func (b *Bench) workflowState(ctx context.Context, workflowID string) string {
	c, err := b.Temporal()
	if err != nil {
		return fmt.Sprintf("cannot reach Temporal: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	value, err := c.QueryWorkflow(ctx, workflowID, "", "state")
	if err != nil {
		return fmt.Sprintf("query state of %s: %v", workflowID, err)
	}
	var state any
	if err := value.Get(&state); err != nil {
		return fmt.Sprintf("decoding state of %s: %v", workflowID, err)
	}
	out, _ := json.MarshalIndent(state, "", "  ")
	return string(out)
}

// LogPath is the log file of a service component ("worker" or "starter").
func (b *Bench) LogPath(component string) string {
	return filepath.Join(b.Env.Dir, "logs", "service-"+component+".log")
}

// KeepServiceLogs copies the last 8 MiB of the worker's and the starter's logs into dir (as
// service-<component>.log), which outlives the environment's directory; a failure is logged.
func (b *Bench) KeepServiceLogs(dir string) {
	for _, c := range components {
		if err := CopyTail(b.LogPath(c), filepath.Join(dir, "service-"+c+".log"), 8<<20); err != nil {
			b.Logf("bench: keeping the %s log: %v", c, err)
		}
	}
}

// LoadWorkerArgs are the worker's flags in the load benchmarks, then extra: client rates that
// do not throttle hundreds of objects.
func LoadWorkerArgs(extra ...string) []string {
	return append([]string{"--kube-api-qps", "500", "--kube-api-burst", "1000"}, extra...)
}

// LoadStarterArgs are the starter's flags in the load benchmarks, then extra.
func LoadStarterArgs(extra ...string) []string {
	return append([]string{"--trigger-workers", "16", "--kube-api-qps", "500", "--kube-api-burst", "1000"}, extra...)
}

// logTail is the last n lines of a service component's log.
func (b *Bench) logTail(component string, n int) string {
	data, err := os.ReadFile(b.LogPath(component))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logProblem is one kind of warning or error in a component's log.
type logProblem struct {
	key          string
	count        int
	first, last  string // times
	workflowType map[string]int
}

var (
	runIDPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:\d+)*`)
	numberPattern = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|µs)?\b`)
)

// logProblems groups the WARN and ERROR lines of a component's log (console format: time,
// level, logger or caller, message, JSON fields; tab-separated) by level, message and error,
// most frequent first.
func (b *Bench) logProblems(component string) ([]*logProblem, error) {
	data, err := os.ReadFile(b.LogPath(component))
	if err != nil {
		return nil, err
	}
	byKey := map[string]*logProblem{}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.SplitN(line, "\t", 5)
		if len(fields) < 4 || (fields[1] != "WARN" && fields[1] != "ERROR") {
			continue
		}
		key := fields[1] + " " + runIDPattern.ReplaceAllString(fields[3], "<run>")
		var extra struct{ Error, WorkflowType, LocalActivityType string }
		if len(fields) == 5 {
			_ = json.Unmarshal([]byte(fields[4]), &extra)
		}
		if extra.LocalActivityType != "" {
			key += " (" + extra.LocalActivityType + ")"
		}
		if extra.Error != "" {
			e := numberPattern.ReplaceAllString(runIDPattern.ReplaceAllString(extra.Error, "<run>"), "N")
			if len(e) > 140 {
				e = e[:140] + "…"
			}
			key += ": " + e
		}
		p := byKey[key]
		if p == nil {
			p = &logProblem{key: key, first: fields[0], workflowType: map[string]int{}}
			byKey[key] = p
		}
		p.count++
		p.last = fields[0]
		if extra.WorkflowType != "" {
			p.workflowType[extra.WorkflowType]++
		}
	}
	out := slices.Collect(maps.Values(byKey))
	slices.SortFunc(out, func(a, b *logProblem) int { return b.count - a.count })
	return out, nil
}

// LogSection reports the warnings and errors of the worker and starter logs, grouped.
func (b *Bench) LogSection(r *Report) {
	r.Heading(2, "Warnings and errors in the service logs")
	for _, c := range components {
		problems, err := b.logProblems(c)
		if err != nil {
			r.Printf("%s: %v\n\n", c, err)
			continue
		}
		if len(problems) == 0 {
			r.Printf("%s: none.\n\n", c)
			continue
		}
		r.Printf("%s (%d kinds):\n\n", c, len(problems))
		var rows [][]string
		for _, p := range problems[:min(15, len(problems))] {
			rows = append(rows, []string{fmt.Sprint(p.count), p.key, formatCounts(p.workflowType), shortTime(p.first) + " – " + shortTime(p.last)})
		}
		r.Table([]string{"lines", "level, message (error)", "workflow types", "first – last (UTC)"}, rows)
		r.Printf("\n")
	}
}

// shortTime keeps the clock of an RFC 3339 timestamp.
func shortTime(ts string) string {
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return t.UTC().Format("15:04:05")
	}
	return ts
}

func ptr[T any](v T) *T { return &v }
