// Command envbench measures the local environment itself at its largest size: how long Start
// takes for -members members (-light of them light), then, with nothing else to do, the
// resident memory and CPU of every process over -idle, summed per cluster, so that a full
// and a light member can be compared. It prints a Markdown report and writes it to
// .bench/env-report.md; it asserts nothing.
//
//	go run ./test/bench/cmd/envbench
//	go run ./test/bench/cmd/envbench -members 4 -light 0 -idle 30s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
)

func main() {
	members := flag.Int("members", env.MaxMembers, "member clusters")
	light := flag.Int("light", env.MaxMembers-2, "how many of the members are light (the last ones)")
	idle := flag.Duration("idle", time.Minute, "how long the idle environment is sampled")
	settle := flag.Duration("settle", 15*time.Second, "wait after Start before sampling, for start-up work to end")
	out := flag.String("out", ".bench/env-report.md", "report file")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r, err := run(ctx, env.Options{Members: *members, LightMembers: *light, Logf: log.Printf}, *settle, *idle)
	if r != nil {
		fmt.Print(r.String())
		if werr := writeReport(*out, r.String()); werr != nil {
			log.Print(werr)
		}
	}
	if err != nil {
		log.Fatal(err)
	}
}

func writeReport(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// sample is one process's memory now and CPU time so far.
type sample struct {
	rss int64
	cpu time.Duration
}

func measure(pids map[string]int) map[string]sample {
	out := map[string]sample{}
	for name, pid := range pids {
		mem, err := bench.ReadMemory(pid)
		if err != nil {
			continue
		}
		cpu, err := bench.CPUTime(pid)
		if err != nil {
			continue
		}
		out[name] = sample{rss: mem.RSS, cpu: cpu}
	}
	return out
}

func run(ctx context.Context, opts env.Options, settle, idle time.Duration) (*bench.Report, error) {
	r := &bench.Report{}
	r.Printf("# The local environment at %d members (%d light)\n\n", opts.Members, opts.LightMembers)
	r.Printf("Started %s on %d CPUs, load average %s; processes of other environments or tests: %s.\n",
		time.Now().Format(time.RFC3339), runtime.NumCPU(), bench.LoadAverage(), bench.ForeignProcesses())
	begin := time.Now()
	e, err := env.Start(ctx, opts)
	if err != nil {
		return r, err
	}
	defer e.Stop()
	started := time.Since(begin)
	r.Printf("\nStart took %s (every cluster ready, members registered, every node Ready).\n", bench.FormatDuration(started))
	r.Headline("start", bench.FormatDuration(started))

	log.Printf("settling %s, then sampling %s", settle, idle)
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(settle):
	}
	pids := e.Processes()
	before, machineBefore := measure(pids), mustMachineCPU()
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(idle):
	}
	after, machineAfter := measure(pids), mustMachineCPU()
	r.Printf("Idle for %s after %s of settling: machine busy %.0f%% (both CPUs, including other users), load average %s.\n",
		idle, settle, 100*bench.Utilization(machineBefore, machineAfter), bench.LoadAverage())

	// Per cluster: the sum of its processes (named <cluster>-<binary>).
	type group struct {
		rss   int64
		cpu   time.Duration
		procs []string
	}
	groups := map[string]*group{}
	var total group
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		key := name
		for _, c := range e.Clusters() {
			if strings.HasPrefix(name, c.Name+"-") {
				key = c.Name
			}
		}
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
		}
		g.rss += a.rss
		g.cpu += a.cpu - b.cpu
		g.procs = append(g.procs, strings.TrimPrefix(name, key+"-"))
		total.rss += a.rss
		total.cpu += a.cpu - b.cpu
	}
	percent := func(cpu time.Duration) string { return fmt.Sprintf("%.1f%%", 100*cpu.Seconds()/idle.Seconds()) }
	row := func(name string, g *group) []string {
		slices.Sort(g.procs)
		return []string{name, strings.Join(g.procs, ", "), bench.FormatBytes(g.rss), percent(g.cpu)}
	}

	r.Heading(2, "Per kind of member (mean over the members of that kind)")
	var rows [][]string
	for _, light := range []bool{false, true} {
		var sum group
		n := 0
		for _, m := range e.Members {
			if g := groups[m.Name]; g != nil && m.Light == light {
				sum.rss += g.rss
				sum.cpu += g.cpu
				sum.procs = g.procs
				n++
			}
		}
		if n == 0 {
			continue
		}
		kind := "full"
		if light {
			kind = "light"
		}
		mean := &group{rss: sum.rss / int64(n), cpu: sum.cpu / time.Duration(n), procs: sum.procs}
		rows = append(rows, append([]string{fmt.Sprintf("%s (%d)", kind, n)}, row("", mean)[1:]...))
		r.Headline(kind+" member RSS", bench.FormatBytes(mean.rss))
		r.Headline(kind+" member idle CPU", percent(mean.cpu))
	}
	r.Table([]string{"member", "processes", "RSS", "idle CPU (of one core)"}, rows)

	r.Heading(2, "Every cluster and shared process")
	rows = nil
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	order := func(name string) int {
		for i, c := range e.Clusters() {
			if c.Name == name {
				return i
			}
		}
		return -1 // shared processes first
	}
	slices.SortFunc(names, func(a, b string) int {
		if oa, ob := order(a), order(b); oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		label := name
		if m := e.Member(name); m != nil && m.Light {
			label += " (light)"
		}
		rows = append(rows, row(label, groups[name]))
	}
	rows = append(rows, []string{"**total**", "", bench.FormatBytes(total.rss), percent(total.cpu)})
	r.Table([]string{"cluster or process", "processes", "RSS", "idle CPU (of one core)"}, rows)
	r.Headline("total RSS", bench.FormatBytes(total.rss))
	r.Headline("total idle CPU", percent(total.cpu))
	return r, nil
}

func mustMachineCPU() bench.MachineCPU {
	m, err := bench.ReadMachineCPU()
	if err != nil {
		log.Printf("machine CPU: %v", err)
	}
	return m
}
