// Command mcsbench benchmarks the MultiClusterService capability against the local
// environment with the real worker and starter: EndpointSlice propagation latency, cold-start
// convergence of many MultiClusterServices, the footprint afterwards, a member flapping
// under them, and the propagation while one of two workers crashes again and again and while
// Temporal is killed. It runs all of it on each Temporal backend (-temporal: the dev server,
// the Temporal server on PostgreSQL) and compares their key figures side by side. It prints a Markdown report and
// writes it to .bench/report.md; it sets no figure goals, but exits 1 when a step did not
// complete (in the crash steps: an update lost, or a Work or slice duplicated). Everything it starts is
// stopped at the end, on Ctrl-C and when -time-limit runs out.
//
//	go run ./test/bench/cmd/mcsbench
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
	"strings"
	"syscall"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

type config struct {
	latency      bench.LatencyOptions
	cold         bench.ColdOptions
	crash        bench.CrashOptions
	temporal     bench.TemporalOptions
	flaps        bench.FlapOptions
	skipCold     bool
	skipCrash    bool
	skipTemporal bool
	skipFlaps    bool
	// backends are the Temporal backends to run everything on, one after the other.
	backends []string
	// Flags added to the worker's and the starter's, e.g. to compare settings.
	workerArgs, starterArgs string
	timeLimit               time.Duration
	out                     string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.latency.Updates, "updates", 200, "(a) EndpointSlice address changes")
	flag.DurationVar(&cfg.latency.Interval, "interval", 100*time.Millisecond, "(a) time between two changes")
	flag.DurationVar(&cfg.latency.Settle, "settle", time.Minute, "(a) how long to wait for the last change to arrive")
	flag.IntVar(&cfg.cold.Count, "cold-count", 500, "(b) MultiClusterServices created from a cold start")
	flag.IntVar(&cfg.cold.Parallel, "parallel", 16, "(b) goroutines creating objects")
	flag.DurationVar(&cfg.cold.Timeout, "cold-timeout", 5*time.Minute, "(b) how long to wait for convergence")
	flag.DurationVar(&cfg.cold.Sample, "sample", 10*time.Second, "(b) timeline resolution")
	flag.BoolVar(&cfg.skipCold, "skip-cold", false, "skip (b)")
	flag.IntVar(&cfg.crash.Updates, "crash-updates", 300, "(d) EndpointSlice address changes while a worker crashes")
	flag.DurationVar(&cfg.crash.Interval, "crash-interval", 300*time.Millisecond, "(d) time between two changes")
	flag.IntVar(&cfg.crash.Kills, "crash-kills", 20, "(d) SIGKILLs of one of the two workers, each followed by a restart")
	flag.DurationVar(&cfg.crash.Settle, "crash-settle", 2*time.Minute, "(d) how long to wait for the last change to arrive")
	flag.BoolVar(&cfg.skipCrash, "skip-crash", false, "skip (d)")
	flag.BoolVar(&cfg.skipTemporal, "skip-temporal-kill", false, "skip (e)")
	flag.IntVar(&cfg.temporal.Updates, "temporal-updates", 100, "(e) EndpointSlice address changes while Temporal is killed")
	flag.DurationVar(&cfg.temporal.Interval, "temporal-interval", 100*time.Millisecond, "(e) time between two changes")
	flag.DurationVar(&cfg.temporal.KillAt, "temporal-kill-at", 3*time.Second, "(e) when Temporal is killed, after the first change")
	flag.DurationVar(&cfg.temporal.Settle, "temporal-settle", 3*time.Minute, "(e) how long to wait for the last change to arrive")
	flag.IntVar(&cfg.flaps.Flaps, "flaps", 10, "(f) Ready flips of a member to False and back with (b)'s MultiClusterServices running (0 skips)")
	flag.BoolVar(&cfg.skipFlaps, "skip-flaps", false, "skip (f)")
	flag.StringVar(&cfg.flaps.Member, "flap-member", "", "(f) the member flapped (default: (b)'s first consumer, member2)")
	flag.DurationVar(&cfg.flaps.Interval, "flap-interval", 250*time.Millisecond, "(f) time between two changes of the unrelated stream")
	flag.DurationVar(&cfg.flaps.Baseline, "flap-baseline", 20*time.Second, "(f) how long the stream runs alone before the first flap")
	flag.DurationVar(&cfg.flaps.Settle, "flap-settle", 2*time.Minute, "(f) how long to wait for one flap's work to end")
	backends := flag.String("temporal", env.TemporalDev+","+env.TemporalPostgres, "Temporal backends to run on, one after the other: dev (the CLI's dev server), postgres (the Temporal server on PostgreSQL with mTLS)")
	flag.StringVar(&cfg.workerArgs, "worker-args", "", "flags added to the worker's, separated by spaces")
	flag.StringVar(&cfg.starterArgs, "starter-args", "", "flags added to the starter's, separated by spaces")
	flag.DurationVar(&cfg.timeLimit, "time-limit", 50*time.Minute, "the whole run is stopped after this")
	flag.StringVar(&cfg.out, "out", "", "report file (default <repo>/.bench/report.md)")
	flag.Parse()
	cfg.backends = strings.Split(*backends, ",")
	cfg.flaps.Count = cfg.cold.Count
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
	outDir := filepath.Join(root, ".bench")
	if cfg.out == "" {
		cfg.out = filepath.Join(outDir, "report.md")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	runStart := time.Now()
	r := &bench.Report{}
	r.Printf("# karmadaflow MultiClusterService benchmark\n\n")
	idleBefore, _ := bench.ReadMachineCPU()
	busiest := bench.BusiestProcesses(ctx, 2*time.Second)
	idleAfter, _ := bench.ReadMachineCPU()
	if err := ctx.Err(); err != nil {
		return err
	}
	r.Printf("Started %s on %d CPUs. Before starting anything: load average %s; over 2 s the machine was %.0f%% busy, "+
		"processes above 5%% of a core: %s; processes of other environments or tests: %s.\n",
		runStart.Format(time.RFC3339), runtime.NumCPU(), bench.LoadAverage(), 100*bench.Utilization(idleBefore, idleAfter),
		busiest, bench.ForeignProcesses())

	var failures []error
	results := map[string][]bench.Figure{}
	for _, backend := range cfg.backends {
		rb := &bench.Report{}
		err := runOn(ctx, cfg, backend, outDir, rb)
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", backend, err))
		}
		results[backend] = rb.Headlines()
		r.Printf("%s", rb.String())
	}
	summary(r, cfg.backends, results)

	if ctx.Err() != nil {
		r.Printf("\n**Run interrupted** (%v) after %s.\n", context.Cause(ctx), bench.FormatDuration(time.Since(runStart)))
	}
	r.Printf("\nRun took %s; load average %s at the end; processes of other environments or tests at the end: %s.\n",
		bench.FormatDuration(time.Since(runStart)), bench.LoadAverage(), bench.ForeignProcesses())

	if err := os.WriteFile(cfg.out, []byte(r.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(r.String())
	log.Printf("bench: report written to %s", cfg.out)
	return errors.Join(failures...)
}

// runOn runs every step against an environment whose Temporal is backend, reporting into r.
func runOn(ctx context.Context, cfg config, backend, outDir string, r *bench.Report) error {
	r.Printf("\n# On Temporal backend `%s`\n", backend)
	runStart := time.Now()
	e, err := env.Start(ctx, env.Options{Members: 4, Logf: log.Printf, TemporalBackend: backend})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()
	envUp := time.Since(runStart)
	svcStart := time.Now()
	workerArgs := bench.LoadWorkerArgs(strings.Fields(cfg.workerArgs)...)
	starterArgs := bench.LoadStarterArgs(strings.Fields(cfg.starterArgs)...)
	svc, err := service.Start(ctx, e, service.Options{WorkerArgs: workerArgs, StarterArgs: starterArgs})
	if err != nil {
		return err
	}
	defer svc.Stop()
	r.Printf("\nEnvironment (4 members, Temporal `%s`) up in %s, worker and starter (built from this checkout, worker `%s`, starter `%s`) ready %s later.\n",
		backend, bench.FormatDuration(envUp), strings.Join(workerArgs, " "), strings.Join(starterArgs, " "), bench.FormatDuration(time.Since(svcStart)))

	b, err := bench.New(e, svc, log.Printf)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WatchClusters(ctx); err != nil {
		return err
	}

	var failures []error
	step := func(name string, do func() error) {
		if ctx.Err() != nil {
			return
		}
		log.Printf("bench (%s): %s", backend, name)
		b.Mark(name)
		begin := time.Now()
		if err := do(); err != nil {
			log.Printf("bench (%s): %s: %v", backend, name, err)
			r.Printf("\n**%s did not complete**: %v\n", name, err)
			failures = append(failures, fmt.Errorf("%s: %w", name, err))
		}
		log.Printf("bench (%s): %s took %s", backend, name, time.Since(begin).Round(time.Millisecond))
	}
	step("(a) latency", func() error { return b.Latency(ctx, r, cfg.latency) })
	if !cfg.skipCold {
		step("(b) cold start", func() error { return b.Cold(ctx, r, cfg.cold) })
	}
	step("(c) footprint", func() error { return b.Footprint(ctx, r, runStart) })
	// The flaps come before the crash sections so that every MultiClusterService workflow has
	// done its last full reconcile in (b), minutes before: the safety resyncs, 8 to 12 minutes
	// after it, stay out of the flaps' histories.
	switch {
	case cfg.skipFlaps || cfg.flaps.Flaps <= 0:
	case cfg.skipCold:
		r.Heading(2, "(f) Member flaps")
		r.Printf("Skipped: they flap a member under (b)'s MultiClusterServices, and (b) was skipped.\n")
	default:
		step("(f) member flaps", func() error { return b.Flaps(ctx, r, cfg.flaps) })
	}
	if !cfg.skipCrash {
		step("(d) worker crash", func() error { return b.WorkerCrash(ctx, r, cfg.crash) })
	}
	if !cfg.skipTemporal {
		step("(e) Temporal killed", func() error { return b.TemporalKilled(ctx, r, cfg.temporal) })
	}
	b.ClusterSection(r)
	b.LogSection(r)

	logsDir := filepath.Join(outDir, "logs", backend)
	b.KeepServiceLogs(logsDir)
	r.Printf("\nOn `%s` the run took %s. The worker and starter logs are kept in %s (the environment's directory is removed).\n",
		backend, bench.FormatDuration(time.Since(runStart)), logsDir)
	return errors.Join(failures...)
}

// summary compares the key figures of the backends side by side.
func summary(r *bench.Report, backends []string, results map[string][]bench.Figure) {
	r.Printf("\n# Side by side\n\n")
	var names []string
	values := map[string]map[string]string{} // figure -> backend -> value
	for _, backend := range backends {
		for _, f := range results[backend] {
			if values[f.Name] == nil {
				values[f.Name] = map[string]string{}
				names = append(names, f.Name)
			}
			values[f.Name][backend] = f.Value
		}
	}
	var rows [][]string
	for _, name := range names {
		row := []string{name}
		for _, backend := range backends {
			v := values[name][backend]
			if v == "" {
				v = "-"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	r.Table(append([]string{"figure"}, backends...), rows)
}
