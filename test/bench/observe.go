package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

// components are the service's processes.
var components = []string{"worker", "starter"}

// scrapeAll scrapes the metrics of every component; a failed scrape is logged and left out.
func (b *Bench) scrapeAll(ctx context.Context) map[string]Snapshot {
	out := map[string]Snapshot{}
	for _, c := range components {
		s, err := Scrape(ctx, b.Service.MetricsAddress(c))
		if err != nil {
			b.Logf("bench: %v", err)
			continue
		}
		out[c] = s
	}
	return out
}

// cpuTimes is the CPU time each process of the environment and the service has used so far.
func (b *Bench) cpuTimes() map[string]time.Duration {
	var clusters []string
	for _, c := range b.Env.Clusters() {
		clusters = append(clusters, c.Name)
	}
	out := ProcessCPU(b.Env.Dir, clusters)
	if cpu, err := CPUTime(os.Getpid()); err == nil {
		out[filepath.Base(os.Args[0])+" (this program)"] = cpu
	}
	return out
}

// cpuSection reports the CPU time each process used between two readings over wall time,
// the largest first, with the kube-apiservers also summed, and what the whole machine used.
func cpuSection(r *Report, before, after map[string]time.Duration, machineBefore, machineAfter MachineCPU, wall time.Duration, per int, perName string) {
	type use struct {
		name string
		cpu  time.Duration
	}
	var uses []use
	var total, apiservers time.Duration
	for name, cpu := range after {
		d := cpu - before[name]
		total += d
		if strings.HasPrefix(name, "kube-apiserver/") {
			apiservers += d
		}
		uses = append(uses, use{name, d})
	}
	slices.SortFunc(uses, func(a, b use) int { return int(b.cpu - a.cpu) })
	cores := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/wall.Seconds()) }
	each := func(d time.Duration) string { return FormatDuration(d / time.Duration(max(per, 1))) }
	var rows [][]string
	for _, u := range uses[:min(10, len(uses))] {
		rows = append(rows, []string{u.name, FormatDuration(u.cpu), cores(u.cpu), each(u.cpu)})
	}
	rows = append(rows, []string{"all kube-apiservers", FormatDuration(apiservers), cores(apiservers), each(apiservers)},
		[]string{"all processes of the environment and service (and this program)", FormatDuration(total), cores(total), each(total)})
	if busy := machineAfter.Busy - machineBefore.Busy; busy > 0 {
		rows = append(rows, []string{"the whole machine (busy)", FormatDuration(busy), cores(busy), each(busy)},
			[]string{"everything else on the machine", FormatDuration(max(busy-total, 0)), cores(max(busy-total, 0)), each(max(busy-total, 0))})
	}
	r.Printf("CPU used over %s (cores = CPU time / wall time; the machine has %d; per %s = CPU time / %d):\n\n",
		FormatDuration(wall), runtime.NumCPU(), perName, per)
	r.Table([]string{"process", "CPU time", "cores", "per " + perName}, rows)
}

// metricsSection reports what each component's histograms and counters recorded between
// two scrapes.
func (b *Bench) metricsSection(r *Report, before, after map[string]Snapshot) {
	r.Printf("Histogram quantiles (~) are interpolated inside buckets (worker/starter bucket bounds: mcs_* 5 ms·2ⁿ, " +
		"temporal_* and rest_client_* 1, 2, 3, 5, 7.5, 10, 15, 20/25, 30, 50, 75, 100, 250 ms ..., workqueue_* powers of ten), so read them as ranges.\n")
	for _, c := range components {
		if before[c] == nil || after[c] == nil {
			r.Printf("\n%s: metrics not scraped.\n", c)
			continue
		}
		r.Heading(4, c+": histograms")
		r.Printf("%s", histogramTable(HistogramDeltas(before[c], after[c], "mcs_", "temporal_", "workqueue_")))
		r.Heading(4, c+": counters")
		r.Printf("%s", counterTable(CounterDeltas(before[c], after[c], "mcs_", "temporal_", "workqueue_")))
	}
}

// evidence records what the named workflows and the consumers' Work execution believe, and
// the worker's latest log lines, when something did not converge.
func (b *Bench) evidence(ctx context.Context, r *Report, workflowIDs []string, consumers []string) {
	r.Heading(3, "Evidence")
	for _, id := range workflowIDs {
		r.Printf("State of `%s` (`bin/temporal workflow query --address %s --workflow-id %s --name state`):\n",
			id, b.Env.Temporal.Address, id)
		r.Code(b.workflowState(ctx, id))
	}
	for _, c := range consumers {
		id := execution.WorkflowID(c)
		r.Printf("State of `%s`:\n", id)
		r.Code(b.workflowState(ctx, id))
	}
	for _, c := range components {
		r.Printf("%s log, last 40 lines:\n", c)
		r.Code(b.logTail(c, 40))
	}
}

// scrapeAPIServer reads the /metrics of a cluster's kube-apiserver; nil if it cannot.
func (b *Bench) scrapeAPIServer(ctx context.Context, cluster string) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := b.kube(cluster).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Logf("bench: scraping the %s API server: %v", cluster, err)
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Logf("bench: parsing the %s API server's metrics: %v", cluster, err)
		return nil
	}
	return families
}

// requestSection reports the requests an API server served between two scrapes, by verb and
// resource (and, for lists, scope), the most frequent first, and returns their total (0 when
// not scraped).
func requestSection(r *Report, cluster string, before, after Snapshot) float64 {
	if before == nil || after == nil {
		r.Printf("\nRequests to the %s API server: not scraped.\n", cluster)
		return 0
	}
	counts := map[string]float64{}
	total := 0.0
	for _, d := range CounterDeltas(before, after, "apiserver_request_total") {
		labels := labelMap(d.Labels)
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		// A list of one namespace (the Work execution's) costs far less than one across all
		// of them (the MultiClusterService reads' and the informers').
		if labels["verb"] == "LIST" && labels["scope"] != "" {
			key += " in " + labels["scope"]
		}
		if labels["code"] != "" && !strings.HasPrefix(labels["code"], "2") {
			key += " (" + labels["code"] + ")"
		}
		counts[key] += d.Value
		total += d.Value
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var rows [][]string
	for _, k := range keys[:min(15, len(keys))] {
		rows = append(rows, []string{k, trimFloat(counts[k])})
	}
	r.Printf("\nRequests the %s API server served (%s in all; watches count when they start):\n\n", cluster, trimFloat(total))
	r.Table([]string{"verb resource (non-2xx code)", "requests"}, rows)
	etcdSection(r, cluster, before, after)
	return total
}

// labelMap parses a series key (name=value pairs joined by commas) into its labels.
func labelMap(series string) map[string]string {
	labels := map[string]string{}
	for _, kv := range strings.Split(series, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[k] = v
		}
	}
	return labels
}

// etcdSection reports the etcd operations an API server made between two scrapes, by
// operation and resource, the most frequent first: the reads among them are those its watch
// cache did not serve (a quorum read, or an update whose object the cache did not hold).
func etcdSection(r *Report, cluster string, before, after Snapshot) {
	type op struct {
		key   string
		count uint64
		sum   float64
	}
	byKey := map[string]*op{}
	for _, d := range HistogramDeltas(before, after, "etcd_request_duration_seconds") {
		labels := labelMap(d.Labels)
		key := labels["operation"] + " " + labels["resource"]
		if byKey[key] == nil {
			byKey[key] = &op{key: key}
		}
		byKey[key].count += d.Count
		byKey[key].sum += d.Sum
	}
	ops := slices.Collect(maps.Values(byKey))
	if len(ops) == 0 {
		return
	}
	slices.SortFunc(ops, func(a, b *op) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	var rows [][]string
	for _, o := range ops[:min(12, len(ops))] {
		rows = append(rows, []string{o.key, strconv.FormatUint(o.count, 10), fmt.Sprintf("%.2f ms", 1000*o.sum/float64(o.count))})
	}
	r.Printf("\netcd operations of the %s API server (its watch cache served the reads not listed):\n\n", cluster)
	r.Table([]string{"operation resource", "operations", "mean"}, rows)
}
