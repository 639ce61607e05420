package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

type provisioningBench struct {
	env      *env.Env
	temporal client.Client
	procs    *tracker
}

// result is the timeline of one instance, from its creation; a zero duration was not reached.
type result struct {
	name    string
	created time.Time
	service time.Duration // the API server Service has its node port
	etcd    time.Duration // the etcd pod is Ready (its probe passed)
	api     time.Duration // the karmada-apiserver pod is Ready
	pods    time.Duration // every pod of the instance is Ready
	ready   time.Duration // Ready=True, reason Completed, for the current generation
	last    string        // the last Ready condition seen
	err     error
	// readyCPU is the CPU time each pod ("<namespace>/<pod>") had used when the instance
	// became Ready.
	readyCPU map[string]time.Duration
}

// measure creates n instances at once and waits until each is Ready.
func (b *provisioningBench) measure(ctx context.Context, ns string, n int, timeout time.Duration) ([]*result, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := b.env.Host.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, 0, err
	}
	results := make([]*result, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		results[i] = &result{name: fmt.Sprintf("k%02d", i)}
		wg.Go(func() { results[i].err = b.create(ctx, ns, results[i]) })
	}
	wg.Wait()
	for !b.observe(ctx, ns, results) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	var errs []error
	for _, res := range results {
		if res.err == nil && res.ready == 0 {
			res.err = fmt.Errorf("not Ready within %s (last: %s): %w", timeout, res.last, ctx.Err())
		}
		if res.err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", ns, res.name, res.err))
		}
	}
	return results, wall, errors.Join(errs...)
}

// create creates one NodePort instance with the default components.
func (b *provisioningBench) create(ctx context.Context, ns string, res *result) error {
	k := &operatorv1alpha1.Karmada{
		TypeMeta:   metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"},
		ObjectMeta: metav1.ObjectMeta{Name: res.name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}}},
	}
	u, err := kube.ToUnstructured(k)
	if err != nil {
		return err
	}
	res.created = time.Now()
	_, err = b.env.Host.Dynamic().Resource(kube.Karmadas).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// observe reads the Karmadas, Services and pods of ns once and records what each instance
// has reached; it reports whether every instance is Ready (or failed).
func (b *provisioningBench) observe(ctx context.Context, ns string, results []*result) bool {
	karmadas, err := b.env.Host.Dynamic().Resource(kube.Karmadas).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	services, err := b.env.Host.Client().CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	pods, err := b.env.Host.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: prov.LabelManagedBy + "=" + prov.ManagedBy})
	if err != nil {
		return false
	}
	done := true
	for _, res := range results {
		if res.err != nil || res.ready != 0 {
			continue
		}
		done = false
		now := time.Since(res.created)
		names := prov.NamesFor(res.name)
		for _, s := range services.Items {
			if res.service == 0 && s.Name == names.Of(prov.SuffixAPIServer) && len(s.Spec.Ports) > 0 && s.Spec.Ports[0].NodePort != 0 {
				res.service = now
			}
		}
		var k operatorv1alpha1.Karmada
		for _, u := range karmadas.Items {
			if u.GetName() == res.name {
				_ = kube.FromUnstructured(&u, &k)
			}
		}
		own := podsOf(pods.Items, res.name)
		readyPods := 0
		for _, p := range own {
			if !podReady(p) {
				continue
			}
			readyPods++
			switch c := p.Labels[prov.LabelName]; {
			case c == prov.Etcd.Name && res.etcd == 0:
				res.etcd = now
			case c == prov.APIServer.Name && res.api == 0:
				res.api = now
			}
		}
		if want := len(prov.InstalledComponents(&k)) + 3; res.pods == 0 && k.Name != "" && readyPods >= want {
			res.pods = now
		}
		cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		if cond == nil {
			continue
		}
		res.last = cond.Reason + ": " + cond.Message
		if cond.Status == metav1.ConditionTrue && cond.Reason == operatorv1alpha1.ReasonCompleted && k.Status.ObservedGeneration == k.Generation {
			res.ready = now
			b.procs.scan()
			res.readyCPU = map[string]time.Duration{}
			for _, p := range own {
				res.readyCPU[ns+"/"+p.Name] = b.procs.podCPU(ns + "/" + p.Name)
			}
		}
	}
	return done
}

// podsOf are the pods of instance cr among pods.
func podsOf(pods []corev1.Pod, cr string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		if pods[i].Labels[prov.LabelInstance] == cr {
			out = append(out, &pods[i])
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// remove deletes instance ns/name and waits until it is gone and every played process of
// ns has ended: it returns when each happened, from the deletion.
func (b *provisioningBench) remove(ctx context.Context, ns, name string, timeout time.Duration) (gone, ended time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := b.env.Host.Dynamic().Resource(kube.Karmadas).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return 0, 0, err
	}
	for gone == 0 || ended == 0 {
		if gone == 0 {
			var k operatorv1alpha1.Karmada
			if found, err := kube.Get(ctx, b.env.Host.Dynamic(), kube.Karmadas, ns, name, &k); err == nil && !found {
				gone = time.Since(start)
			}
		}
		if b.procs.scan(); ended == 0 && len(b.procs.livePIDs(ns)) == 0 {
			ended = time.Since(start)
		}
		select {
		case <-ctx.Done():
			return gone, ended, fmt.Errorf("%s/%s: Karmada gone after %s, processes ended after %s (0: not yet): %w",
				ns, name, bench.FormatDuration(gone), bench.FormatDuration(ended), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return gone, ended, nil
}

// timeline reports the distribution of each milestone over the instances.
func timeline(r *bench.Report, results []*result, wall time.Duration) {
	var service, etcd, api, pods, ready []time.Duration
	for _, res := range results {
		for _, m := range []struct {
			d   time.Duration
			out *[]time.Duration
		}{{res.service, &service}, {res.etcd, &etcd}, {res.api, &api}, {res.pods, &pods}, {res.ready, &ready}} {
			if m.d != 0 {
				*m.out = append(*m.out, m.d)
			}
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
		row("etcd pod Ready", etcd),
		row("karmada-apiserver pod Ready", api),
		row("every pod of the instance Ready", pods),
		row("**Ready=True (Completed)**", ready),
	})
	r.Printf("\nAll %d created at once; the last became Ready %s after the first was created.\n", len(results), bench.FormatDuration(wall))
	if s := bench.Summarize(ready); s.N > 0 {
		r.Headline("create → Ready=True: min / p50 / max", fmt.Sprintf("%s / %s / %s",
			bench.FormatDuration(slices.Min(ready)), bench.FormatDuration(s.P50), bench.FormatDuration(s.Max)))
	}
	r.Headline("instances Ready", fmt.Sprintf("%d of %d", len(ready), len(results)))
	r.Headline("wall time until the last is Ready", bench.FormatDuration(wall))
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
