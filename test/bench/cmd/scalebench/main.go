// Command scalebench measures karmadaflow at scale (make bench-scale): the local environment at
// -members members (-light of them light) and -count MultiClusterServices, each with -providers
// providers and -consumers consumers chosen by a seeded generator. It reports the cold start
// until every slice is dispatched and every condition True; -rate slice changes a second for
// -steady, with their latency, the CPU of each process, Temporal's history events and bytes and
// the control plane's requests per change, and the service's peak memory; then the stream's
// stall and catch-up around a worker restart and around -flaps flaps of the member most
// MultiClusterServices involve. It prints a Markdown report and writes it to
// .bench/scale-report.md; it sets no figure goals, but exits 1 when a step did not complete
// (a change lost, or no convergence in time).
//
//	go run ./test/bench/cmd/scalebench
//	go run ./test/bench/cmd/scalebench -members 6 -light 4 -count 200 -steady 1m   # a smaller run
package main

import (
	"context"
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

func main() {
	var opts bench.ScaleOptions
	members := flag.Int("members", env.MaxMembers, "member clusters")
	light := flag.Int("light", env.MaxMembers-2, "how many of the members are light (the last ones)")
	backend := flag.String("temporal", env.TemporalDev, "Temporal backend: dev (the CLI's dev server), postgres (the Temporal server on PostgreSQL with mTLS)")
	flag.IntVar(&opts.Count, "count", 2000, "MultiClusterServices")
	flag.IntVar(&opts.Providers, "providers", 2, "providers of each MultiClusterService")
	flag.IntVar(&opts.Consumers, "consumers", 3, "consumers of each MultiClusterService")
	flag.Uint64Var(&opts.Seed, "seed", 1, "seed of the generator that chooses providers, consumers and the changed slices")
	flag.IntVar(&opts.Parallel, "parallel", 32, "goroutines creating objects")
	flag.DurationVar(&opts.ColdTimeout, "cold-timeout", 20*time.Minute, "how long to wait for the cold start to converge")
	flag.DurationVar(&opts.Sample, "sample", 15*time.Second, "cold-start timeline resolution")
	flag.IntVar(&opts.Rate, "rate", 10, "slice changes a second")
	flag.DurationVar(&opts.Steady, "steady", 5*time.Minute, "how long the steady stream runs")
	flag.DurationVar(&opts.Settle, "settle", 3*time.Minute, "how long to wait for the last change of a stream to arrive")
	flag.DurationVar(&opts.Around, "around", time.Minute, "how long the stream runs around the worker restart")
	flag.IntVar(&opts.DisruptionRate, "disruption-rate", 5, "slice changes a second around the worker restart and during the flaps")
	flag.IntVar(&opts.Flaps, "flaps", 5, "Ready flaps of the member most MultiClusterServices involve (0 skips)")
	flag.DurationVar(&opts.FlapSettle, "flap-settle", 3*time.Minute, "how long to wait for one flap's work to end")
	workerArgs := flag.String("worker-args", "", "flags added to the worker's, separated by spaces")
	starterArgs := flag.String("starter-args", "", "flags added to the starter's, separated by spaces")
	timeLimit := flag.Duration("time-limit", 90*time.Minute, "the whole run is stopped after this")
	out := flag.String("out", "", "report file (default <repo>/.bench/scale-report.md)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeLimit)
	defer cancel()
	envOpts := env.Options{Members: *members, LightMembers: *light, Logf: log.Printf, TemporalBackend: *backend}
	if err := run(ctx, envOpts, opts, strings.Fields(*workerArgs), strings.Fields(*starterArgs), *out); err != nil {
		log.Print(err)
		stop()
		cancel()
		os.Exit(1)
	}
}

func run(ctx context.Context, envOpts env.Options, opts bench.ScaleOptions, workerExtra, starterExtra []string, out string) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(root, ".bench", "scale-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	runStart := time.Now()
	r := &bench.Report{}
	r.Printf("# karmadaflow at scale: %d members, %d MultiClusterServices\n\n", envOpts.Members, opts.Count)
	r.Printf("Started %s on %d CPUs; load average %s; processes of other environments or tests: %s.\n\n",
		runStart.Format(time.RFC3339), runtime.NumCPU(), bench.LoadAverage(), bench.ForeignProcesses())

	runErr := measure(ctx, envOpts, opts, workerExtra, starterExtra, root, r)
	if runErr != nil {
		r.Printf("\n**Did not complete**: %v\n", runErr)
	}
	r.Printf("\n## Figures\n\n")
	var rows [][]string
	for _, f := range r.Headlines() {
		rows = append(rows, []string{f.Name, f.Value})
	}
	r.Table([]string{"figure", "value"}, rows)
	r.Printf("\nRun took %s; load average %s at the end.\n", bench.FormatDuration(time.Since(runStart)), bench.LoadAverage())
	if err := os.WriteFile(out, []byte(r.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(r.String())
	log.Printf("bench: report written to %s", out)
	return runErr
}

func measure(ctx context.Context, envOpts env.Options, opts bench.ScaleOptions, workerExtra, starterExtra []string, root string, r *bench.Report) error {
	begin := time.Now()
	e, err := env.Start(ctx, envOpts)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()
	envUp := time.Since(begin)
	workerArgs := bench.LoadWorkerArgs(workerExtra...)
	starterArgs := bench.LoadStarterArgs(starterExtra...)
	svcStart := time.Now()
	svc, err := service.Start(ctx, e, service.Options{WorkerArgs: workerArgs, StarterArgs: starterArgs})
	if err != nil {
		return err
	}
	defer svc.Stop()
	r.Printf("Environment (%d members, %d of them light; Temporal `%s`) up in %s; worker (`%s`) and starter (`%s`), built from "+
		"this checkout, ready %s later.\n\n", envOpts.Members, envOpts.LightMembers, envOpts.TemporalBackend, bench.FormatDuration(envUp),
		strings.Join(workerArgs, " "), strings.Join(starterArgs, " "), bench.FormatDuration(time.Since(svcStart)))

	b, err := bench.New(e, svc, log.Printf)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WatchClusters(ctx); err != nil {
		return err
	}
	scaleErr := b.Scale(ctx, r, opts)
	b.LogSection(r)
	logsDir := filepath.Join(root, ".bench", "logs", "scale")
	b.KeepServiceLogs(logsDir)
	r.Printf("\nThe worker and starter logs are kept in %s.\n", logsDir)
	return scaleErr
}
