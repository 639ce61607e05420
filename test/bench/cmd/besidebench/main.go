// Command besidebench compares, in one run on one environment beside a real Karmada
// (env.Options.BesideKarmada, 3 members), the EndpointSlice propagation latency of
// karmadaflow's MultiClusterService with Karmada's own:
//
//   - phase A: karmadaflow's worker and starter run beside Karmada (the chart's mode
//     besideKarmada), karmada-controller-manager without its MultiClusterService controllers;
//   - phase B: karmadaflow stopped, karmada-controller-manager restarted with --controllers=*
//     and --feature-gates=MultiClusterService=true (its multiclusterservice,
//     endpointsliceCollect and endpointsliceDispatch controllers on: without the alpha
//     feature gate they are skipped even when listed).
//
// Each phase creates a MultiClusterService (CrossCluster, provider member1, consumers member2
// and member3) and its Service in a namespace of its own in the control plane and changes the
// address of a hand-written EndpointSlice in the provider -updates times, -interval apart,
// watching when each address shows in each consumer's dispatched slice. It prints a Markdown
// report and writes it to .bench/beside-report.md; it exits 1 when a phase did not complete.
//
//	go run ./test/bench/cmd/besidebench
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
	"sync"
	"syscall"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// besideKarmadaCapabilities are the worker's and the starter's flags beside Karmada, those
// the chart's mode besideKarmada gives them.
var besideKarmadaCapabilities = []string{"--enable-work-execution=false", "--enable-cluster-health=false", "--enable-provisioning=false"}

// The phases' namespaces, and karmada-controller-manager's controllers and feature gate in
// phase B.
const (
	namespaceKarmadaflow = "bench-karmadaflow"
	namespaceKarmada     = "bench-karmada"
	allControllers       = "*"
	mcsFeatureGate       = "--feature-gates=MultiClusterService=true"
)

type config struct {
	latency   bench.LatencyOptions
	timeLimit time.Duration
	out       string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.latency.Updates, "updates", 200, "EndpointSlice address changes per phase")
	flag.DurationVar(&cfg.latency.Interval, "interval", 100*time.Millisecond, "time between two changes")
	flag.DurationVar(&cfg.latency.Settle, "settle", time.Minute, "how long to wait for the last change to arrive")
	flag.DurationVar(&cfg.timeLimit, "time-limit", 30*time.Minute, "the whole run is stopped after this")
	flag.StringVar(&cfg.out, "out", "", "report file (default <repo>/.bench/beside-report.md)")
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

// phase is one implementation's measurement.
type phase struct {
	name   string
	res    *bench.BesideResult
	err    error
	took   time.Duration
	report *bench.Report
}

func run(ctx context.Context, cfg config) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	outDir := filepath.Join(root, ".bench")
	if cfg.out == "" {
		cfg.out = filepath.Join(outDir, "beside-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	runStart := time.Now()
	r := &bench.Report{}
	r.Printf("# EndpointSlice propagation beside Karmada: karmadaflow vs Karmada's own MultiClusterService\n\n")
	idleBefore, _ := bench.ReadMachineCPU()
	busiest := bench.BusiestProcesses(ctx, 2*time.Second)
	idleAfter, _ := bench.ReadMachineCPU()
	if err := ctx.Err(); err != nil {
		return err
	}
	r.Printf("Started %s on %s. Before starting anything: load average %s; over 2 s the machine was %.0f%% busy, "+
		"processes above 5%% of a core: %s; processes of other environments or tests: %s.\n\n",
		runStart.Format(time.RFC3339), machine(), bench.LoadAverage(), 100*bench.Utilization(idleBefore, idleAfter),
		busiest, bench.ForeignProcesses())

	e, err := env.Start(ctx, env.Options{Members: 3, BesideKarmada: true, Logf: log.Printf})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()
	envUp := time.Since(runStart)
	svc, err := service.Start(ctx, e, service.Options{ChartValues: []string{"mode=besideKarmada"},
		WorkerArgs: besideKarmadaCapabilities, StarterArgs: besideKarmadaCapabilities})
	if err != nil {
		return err
	}
	stopService := sync.OnceFunc(svc.Stop)
	defer stopService()
	b, err := bench.New(e, svc, log.Printf)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WatchClusters(ctx); err != nil {
		return err
	}
	r.Printf("Environment (3 members beside Karmada, Temporal dev server) up in %s.\n\n", bench.FormatDuration(envUp))

	a := measure(ctx, b, "karmadaflow beside Karmada", namespaceKarmadaflow, cfg.latency)
	// karmadaflow cleans up what its MultiClusterService dispatched before it stops.
	cleanup := b.DeleteMCS(ctx, namespaceKarmadaflow, bench.BesideService, consumers(e), 2*time.Minute)
	stopService()
	log.Printf("besidebench: karmadaflow stopped (phase A cleanup: %v)", cleanup)

	k := &phase{name: "Karmada's own MultiClusterService", report: &bench.Report{}}
	b.Mark("restart karmada-controller-manager")
	if err := e.RestartKarmadaControllerManager(ctx, allControllers, mcsFeatureGate); err != nil {
		k.err = err
	} else {
		k = measure(ctx, b, k.name, namespaceKarmada, cfg.latency)
	}

	settings(r, cfg, cleanup)
	sideBySide(r, a, k)
	for _, p := range []*phase{a, k} {
		r.Heading(2, p.name+" (namespace details)")
		r.Printf("%s", p.report.String())
		if p.err != nil {
			r.Printf("\n**Did not complete**: %v\n", p.err)
		}
	}
	b.ClusterSection(r)
	keepLogs(r, e, outDir)
	if ctx.Err() != nil {
		r.Printf("\n**Run interrupted** (%v).\n", context.Cause(ctx))
	}
	r.Printf("\nRun took %s; load average %s at the end; processes of other environments or tests at the end: %s.\n",
		bench.FormatDuration(time.Since(runStart)), bench.LoadAverage(), bench.ForeignProcesses())

	if err := os.WriteFile(cfg.out, []byte(r.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(r.String())
	log.Printf("besidebench: report written to %s", cfg.out)
	var errs []error
	for _, p := range []*phase{a, k} {
		if p.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, p.err))
		}
	}
	return errors.Join(errs...)
}

// measure runs one phase's latency measurement in namespace.
func measure(ctx context.Context, b *bench.Bench, name, namespace string, opts bench.LatencyOptions) *phase {
	log.Printf("besidebench: %s", name)
	b.Mark(name)
	p := &phase{name: name, report: &bench.Report{}}
	begin := time.Now()
	p.res, p.err = b.BesideLatency(ctx, p.report, namespace, opts)
	p.took = time.Since(begin)
	if p.err == nil && p.res.SettleErr != nil {
		p.err = p.res.SettleErr
	}
	log.Printf("besidebench: %s took %s (%v)", name, p.took.Round(time.Millisecond), p.err)
	return p
}

// consumers are the members a stream dispatches to (member2, member3).
func consumers(e *env.Env) []string {
	var out []string
	for _, m := range e.Members[1:] {
		out = append(out, m.Name)
	}
	return out
}

// settings reports how the run was set up.
func settings(r *bench.Report, cfg config, cleanup error) {
	r.Printf("Settings: %d address changes per phase, started %s apart; up to %s for the last one to arrive; "+
		"latency = from just before the write in the provider to the moment a watch on the consumer shows its dispatched "+
		"slice with the new address (a later address seen first counts the earlier change as delivered then); "+
		"percentiles nearest-rank.\n\n", cfg.latency.Updates, cfg.latency.Interval, cfg.latency.Settle)
	r.Printf("- Phase A: karmada-controller-manager `--controllers=%s`; karmadaflow's worker and starter (chart mode "+
		"besideKarmada, `%v`, default --kube-api-qps 50/--kube-api-burst 100) collect and dispatch; Karmada's execution "+
		"controller applies the dispatched Works.\n", env.DefaultKarmadaControllers, besideKarmadaCapabilities)
	r.Printf("- Between the phases: phase A's MultiClusterService deleted and its slices gone (%s), then karmadaflow "+
		"stopped.\n", orOK(cleanup))
	r.Printf("- Phase B: karmada-controller-manager restarted with `--controllers=%s %s` (default --kube-api-qps 40/"+
		"--kube-api-burst 60); its multiclusterservice, endpointsliceCollect and endpointsliceDispatch controllers "+
		"collect and dispatch (without the alpha feature gate they are skipped even when listed), its execution "+
		"controller applies.\n", allControllers, mcsFeatureGate)
	r.Printf("- In both phases the rest of karmada-controller-manager runs alike (namespace sync, binding, execution). " +
		"Its ServiceExport endpointSlice controller writes imported-<cluster>-<slice> EndpointSlices into the control " +
		"plane for collected Works labelled endpointslice.karmada.io/name (ServiceExport's label, which karmadaflow's " +
		"collected Works carried once): each phase's details list the control plane's slices, none expected.\n\n")
}

func orOK(err error) string {
	if err != nil {
		return "**" + err.Error() + "**"
	}
	return "ok"
}
