package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/test/bench"
)

// componentOrder is the order of the table's rows: install order, optional ones last.
var componentOrder = []string{prov.Etcd.Name, prov.APIServer.Name, prov.AggregatedAPIServer.Name, prov.KubeControllerManager.Name,
	prov.ControllerManager.Name, prov.Scheduler.Name, prov.Webhook.Name, prov.Search.Name, prov.Descheduler.Name, prov.MetricsAdapter.Name}

// use is what one component of one instance used (all of its pods, all of their processes).
type use struct {
	readyCPU, idleCPU time.Duration
	mem               memory
}

func (x *use) add(o *use) {
	x.readyCPU, x.idleCPU = x.readyCPU+o.readyCPU, x.idleCPU+o.idleCPU
	x.mem.rss, x.mem.peak, x.mem.pss, x.mem.procs = x.mem.rss+o.mem.rss, x.mem.peak+o.mem.peak, x.mem.pss+o.mem.pss, x.mem.procs+o.mem.procs
}

// usage is what the played components of the Ready instances of a measurement used.
type usage struct {
	instances map[string]map[string]*use // instance -> component (app.kubernetes.io/name) -> use
	planned   time.Duration              // the window asked for, for the figures' names
	window    time.Duration              // as it was
	idleCPU   time.Duration              // every played process of the machine, over the window
	busy      float64                    // the machine's busy fraction over the window
	all       memory                     // every played process of the machine, at the end of the window
	used      int64                      // MemTotal - MemAvailable at the end of the window
}

// usage waits window with every instance of ns Ready, then attributes to each component of
// each Ready instance its CPU time until Ready, its CPU time over the window and its memory.
func (b *provisioningBench) usage(ctx context.Context, ns string, results []*result, window time.Duration) (*usage, error) {
	pods, err := b.env.Host.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: prov.LabelManagedBy + "=" + prov.ManagedBy})
	if err != nil {
		return nil, err
	}
	b.procs.scan()
	before := map[string]time.Duration{}
	for _, p := range pods.Items {
		before[ns+"/"+p.Name] = b.procs.podCPU(ns + "/" + p.Name)
	}
	allBefore := b.totalCPU()
	machineBefore, _ := bench.ReadMachineCPU()
	start := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	b.procs.scan()
	machineAfter, _ := bench.ReadMachineCPU()
	u := &usage{instances: map[string]map[string]*use{}, planned: window, window: time.Since(start), idleCPU: b.totalCPU() - allBefore,
		busy: bench.Utilization(machineBefore, machineAfter)}
	live := b.procs.livePIDs(ns)
	for _, res := range results {
		if res.ready == 0 {
			continue
		}
		uses := map[string]*use{}
		for _, p := range podsOf(pods.Items, res.name) {
			key, component := ns+"/"+p.Name, p.Labels[prov.LabelName]
			x := uses[component]
			if x == nil {
				x = &use{}
				uses[component] = x
			}
			x.add(&use{readyCPU: res.readyCPU[key], idleCPU: b.procs.podCPU(key) - before[key], mem: readMemory(live[key])})
		}
		u.instances[res.name] = uses
	}
	var all []int
	for _, pids := range b.procs.livePIDs("") {
		all = append(all, pids...)
	}
	u.all, u.used = readMemory(all), machineMemoryUsed()
	return u, nil
}

// totalCPU is the CPU time of every played process seen so far.
func (b *provisioningBench) totalCPU() time.Duration {
	b.procs.mu.Lock()
	defer b.procs.mu.Unlock()
	var total time.Duration
	for _, cpu := range b.procs.cpu {
		total += cpu
	}
	return total
}

// report writes the table of components and the machine-wide figures.
func (u *usage) report(r *bench.Report) {
	r.Printf("\nEach component's processes are found through /proc (the command line names a file under the pod's directory); "+
		"CPU is user+system time from the process's start (restarted processes included, as last sampled every second) "+
		"until its instance was Ready, and over %s of idling once every instance was Ready. Memory is read at the end of that window: "+
		"RSS (VmRSS), its peak since start (VmHWM). Mean and max are over the %d Ready instances.\n\n", bench.FormatDuration(u.window), len(u.instances))
	present := map[string]bool{}
	for _, uses := range u.instances {
		for c := range uses {
			present[c] = true
		}
	}
	order := slices.Clone(componentOrder)
	for _, c := range slices.Sorted(maps.Keys(present)) {
		if !slices.Contains(order, c) {
			order = append(order, c)
		}
	}
	var rows [][]string
	var totals []*use
	for _, uses := range u.instances {
		t := &use{}
		for _, x := range uses {
			t.add(x)
		}
		totals = append(totals, t)
	}
	for _, c := range order {
		if !present[c] {
			continue
		}
		var xs []*use
		for _, uses := range u.instances {
			if x := uses[c]; x != nil {
				xs = append(xs, x)
			}
		}
		rows = append(rows, u.row(c, xs))
	}
	rows = append(rows, u.row("**all components of an instance**", totals))
	r.Table([]string{"component", "instances", "CPU create→Ready mean", "max", fmt.Sprintf("CPU over %s idle mean", bench.FormatDuration(u.window)), "max",
		"RSS mean", "max", "peak RSS mean", "max"}, rows)
	r.Printf("\nMachine-wide, every played process (%d): RSS %s in total (PSS %s, shared pages counted once); the machine's memory in use "+
		"(MemTotal − MemAvailable, environment and service included) %s. Over the idle window they used %s of CPU (%.1f%% of one core), "+
		"the machine was %.0f%% busy.\n", u.all.procs, bench.FormatBytes(u.all.rss), bench.FormatBytes(u.all.pss), bench.FormatBytes(u.used),
		bench.FormatDuration(u.idleCPU), 100*float64(u.idleCPU)/float64(u.window), 100*u.busy)
	if len(totals) > 0 {
		mean := u.mean(totals)
		r.Headline("CPU create → Ready, all components of an instance (mean)", bench.FormatDuration(mean.readyCPU))
		r.Headline(fmt.Sprintf("CPU over %s idle, all components of an instance (mean, %% of a core)", bench.FormatDuration(u.planned)), u.idle(mean.idleCPU))
		r.Headline("RSS of an instance's components (mean)", bench.FormatBytes(mean.mem.rss))
	}
	r.Headline("RSS of every played process (machine)", bench.FormatBytes(u.all.rss))
	r.Headline("PSS of every played process (machine)", bench.FormatBytes(u.all.pss))
	r.Headline(fmt.Sprintf("CPU of every played process over %s idle (%% of a core)", bench.FormatDuration(u.planned)), u.idle(u.idleCPU))
	r.Headline("machine memory in use (MemTotal − MemAvailable)", bench.FormatBytes(u.used))
}

// row is the mean and max of xs.
func (u *usage) row(label string, xs []*use) []string {
	mean, most := u.mean(xs), &use{}
	for _, x := range xs {
		most.readyCPU, most.idleCPU = max(most.readyCPU, x.readyCPU), max(most.idleCPU, x.idleCPU)
		most.mem.rss, most.mem.peak = max(most.mem.rss, x.mem.rss), max(most.mem.peak, x.mem.peak)
	}
	return []string{label, fmt.Sprint(len(xs)), bench.FormatDuration(mean.readyCPU), bench.FormatDuration(most.readyCPU),
		u.idle(mean.idleCPU), u.idle(most.idleCPU), bench.FormatBytes(mean.mem.rss), bench.FormatBytes(most.mem.rss),
		bench.FormatBytes(mean.mem.peak), bench.FormatBytes(most.mem.peak)}
}

func (u *usage) mean(xs []*use) *use {
	m := &use{}
	if len(xs) == 0 {
		return m
	}
	for _, x := range xs {
		m.add(x)
	}
	n := len(xs)
	m.readyCPU, m.idleCPU = m.readyCPU/time.Duration(n), m.idleCPU/time.Duration(n)
	m.mem.rss, m.mem.peak = m.mem.rss/int64(n), m.mem.peak/int64(n)
	return m
}

// idle prints CPU time used over the window and its share of one core.
func (u *usage) idle(cpu time.Duration) string {
	return fmt.Sprintf("%s (%.1f%%)", bench.FormatDuration(cpu), 100*float64(cpu)/float64(u.window))
}
