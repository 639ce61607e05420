package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// sideBySide reports both phases' latencies, one row per implementation and consumer, and
// the ratio karmadaflow / Karmada of the key figures.
func sideBySide(r *bench.Report, a, k *phase) {
	r.Heading(2, "Side by side")
	var rows [][]string
	for _, p := range []*phase{a, k} {
		if p.res == nil {
			rows = append(rows, []string{p.name, "-", "did not complete", "-", "-", "-", "-"})
			continue
		}
		for i, c := range p.res.Consumers {
			rows = append(rows, latencyRow(p, c, p.res.Consumer[i]))
		}
		rows = append(rows, latencyRow(p, "**both (slowest per change)**", p.res.All))
	}
	r.Table([]string{"implementation", "consumer", "delivered", "p50", "p90", "p99", "max"}, rows)

	r.Printf("\n")
	var ratios [][]string
	ratio := func(name string, of func(*bench.BesideResult) (time.Duration, bool)) {
		row := []string{name}
		var values []time.Duration
		for _, p := range []*phase{a, k} {
			v, ok := time.Duration(0), false
			if p.res != nil {
				v, ok = of(p.res)
			}
			if !ok {
				row = append(row, "-")
				continue
			}
			row = append(row, bench.FormatDuration(v))
			values = append(values, v)
		}
		if len(values) == 2 && values[1] > 0 {
			row = append(row, fmt.Sprintf("%.2f", float64(values[0])/float64(values[1])))
		} else {
			row = append(row, "-")
		}
		ratios = append(ratios, row)
	}
	summary := func(pick func(bench.Summary) time.Duration, consumer int) func(*bench.BesideResult) (time.Duration, bool) {
		return func(res *bench.BesideResult) (time.Duration, bool) {
			s := res.All
			if consumer >= 0 {
				s = res.Consumer[consumer]
			}
			return pick(s), s.N > 0
		}
	}
	p50 := func(s bench.Summary) time.Duration { return s.P50 }
	p99 := func(s bench.Summary) time.Duration { return s.P99 }
	ratio("**p50, both consumers (slowest per change)**", summary(p50, -1))
	ratio("**p99, both consumers (slowest per change)**", summary(p99, -1))
	for i, c := range consumerNames(a, k) {
		ratio("p50 "+c, summary(p50, i))
		ratio("p99 "+c, summary(p99, i))
	}
	ratio("setup until the first address was in both consumers", func(res *bench.BesideResult) (time.Duration, bool) {
		return res.Setup, true
	})
	for _, group := range cpuGroups {
		ratio("CPU per change: "+group.name, func(res *bench.BesideResult) (time.Duration, bool) {
			return group.of(res.CPU) / time.Duration(max(res.Writes, 1)), true
		})
	}
	ratio("CPU per change: everything else on the machine (other users' processes)", func(res *bench.BesideResult) (time.Duration, bool) {
		return foreignCPU(res) / time.Duration(max(res.Writes, 1)), res.MachineBusy > 0
	})
	r.Table([]string{"figure", a.name, k.name, "karmadaflow / Karmada"}, ratios)
	r.Printf("\nCPU per change = CPU time from the first write until the last address was everywhere, over the changes; "+
		"the machine was busy %s (karmadaflow) and %s (Karmada) of that time.\n", busy(a), busy(k))
	for _, p := range []*phase{a, k} {
		if cores := foreignCores(p); cores > foreignLimit {
			r.Printf("\n**Not a fair comparison**: processes outside the environment used %.2f cores during %s; "+
				"run again on a quiet machine.\n", cores, p.name)
		}
	}
}

// foreignLimit is how many cores other processes may use during a phase before the
// comparison is flagged as unfair.
const foreignLimit = 0.1

// foreignCPU is the CPU time the machine spent outside the environment, the service and
// this program during a phase's updates.
func foreignCPU(res *bench.BesideResult) time.Duration {
	var ours time.Duration
	for _, d := range res.CPU {
		ours += d
	}
	return max(res.MachineBusy-ours, 0)
}

// foreignCores is foreignCPU in cores.
func foreignCores(p *phase) float64 {
	if p.res == nil || p.res.Wall <= 0 {
		return 0
	}
	return foreignCPU(p.res).Seconds() / p.res.Wall.Seconds()
}

func latencyRow(p *phase, consumer string, s bench.Summary) []string {
	row := []string{p.name, consumer, fmt.Sprintf("%d/%d", s.N, p.res.Writes)}
	if s.N == 0 {
		return append(row, "-", "-", "-", "-")
	}
	return append(row, bench.FormatDuration(s.P50), bench.FormatDuration(s.P90), bench.FormatDuration(s.P99), bench.FormatDuration(s.Max))
}

// consumerNames are the consumers of whichever phase completed.
func consumerNames(phases ...*phase) []string {
	for _, p := range phases {
		if p.res != nil {
			return p.res.Consumers
		}
	}
	return nil
}

func busy(p *phase) string {
	if p.res == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*p.res.Busy)
}

// cpuGroups sum the CPU of the processes that do the work in either phase.
var cpuGroups = []struct {
	name string
	of   func(map[string]time.Duration) time.Duration
}{
	{"karmadaflow worker + starter", func(m map[string]time.Duration) time.Duration { return m["worker"] + m["starter"] }},
	{"karmada-controller-manager", func(m map[string]time.Duration) time.Duration { return m["karmada-controller-manager"] }},
	{"all kube-apiservers", func(m map[string]time.Duration) time.Duration {
		var sum time.Duration
		for name, d := range m {
			if strings.HasPrefix(name, "kube-apiserver/") {
				sum += d
			}
		}
		return sum
	}},
}

// machine describes the machine: cores, CPU model and memory.
func machine() string {
	out := fmt.Sprintf("%d cores", runtime.NumCPU())
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				out += " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				out += fmt.Sprintf(", %.1f GiB of memory", float64(kb)/(1<<20))
				break
			}
		}
	}
	return out
}

// keepLogs copies the tails of karmada-controller-manager's and the service's logs out of the
// environment's directory, which is removed.
func keepLogs(r *bench.Report, e *env.Env, outDir string) {
	dir := filepath.Join(outDir, "logs", "beside")
	var kept []string
	for _, name := range []string{"karmada-controller-manager", "service-worker", "service-starter"} {
		src := filepath.Join(e.Dir, "logs", name+".log")
		if err := bench.CopyTail(src, filepath.Join(dir, name+".log"), 8<<20); err != nil {
			r.Printf("\nKeeping %s: %v\n", src, err)
			continue
		}
		kept = append(kept, name+".log")
	}
	r.Printf("\nLogs kept in %s: %s (KEEP=1 keeps the whole environment directory).\n", dir, strings.Join(kept, ", "))
}
