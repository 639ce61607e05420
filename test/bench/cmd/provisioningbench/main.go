// Command provisioningbench measures Karmada provisioning in the local environment with the
// real worker and starter and real control planes: the environment's pod runner
// (env.Options.PlayPods) runs every pod the provisioning writes (etcd, the API servers, the
// controller managers, the scheduler, the webhook) from its manifest, with the binaries of
// bin/. It measures the time from creating a Karmada object to its Ready=True condition, for
// one instance and for several created at once, and the CPU time and memory of each played
// component until Ready and while idle. Everything runs on loopback. It prints a Markdown
// report and writes it to .bench/provisioning-report.md; it asserts nothing.
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
	"strings"
	"syscall"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

type config struct {
	many      int
	timeout   time.Duration
	idle      time.Duration
	timeLimit time.Duration
	out       string
}

// The namespaces of the two measurements' instances.
const (
	nsOne  = "bench-one"
	nsMany = "bench-many"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.many, "many", 10, "instances created at once in the second measurement")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "how long the instances of one measurement may take to become Ready")
	flag.DurationVar(&cfg.idle, "idle", time.Minute, "the idle window over which CPU is measured once every instance is Ready")
	flag.DurationVar(&cfg.timeLimit, "time-limit", 25*time.Minute, "the whole run is stopped after this")
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

	e, err := env.Start(ctx, env.Options{Members: 1, PlayPods: true, Logf: log.Printf})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()
	svc, err := service.Start(ctx, e, service.Options{ChartValues: []string{"provisioning.namespaces={" + nsOne + "," + nsMany + "}"},
		WorkerArgs: []string{"--provisioning-namespaces=" + nsOne + "," + nsMany}})
	if err != nil {
		return err
	}
	defer svc.Stop()
	temporal, err := e.Temporal.Dial(ctx)
	if err != nil {
		return err
	}
	defer temporal.Close()
	r.Printf("Environment (host cluster, 1 member, the pod runner playing the provisioned pods) and the worker and starter up in %s.\n",
		bench.FormatDuration(time.Since(runStart)))
	r.Printf("\nEvery instance is `serviceType: NodePort` with the default components. Every pod the provisioning writes runs for real "+
		"from its manifest (binaries of bin/, each process in a mount namespace of its own, on a loopback address of its own), "+
		"so the measured time includes starting etcd, the API servers and Karmada's components and their readiness probes. "+
		"The single instance is deleted (and its processes end) before the %d are created.\n", cfg.many)

	procs := newTracker(e.PodsDir())
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	go procs.run(trackCtx, time.Second)
	b := &provisioningBench{env: e, temporal: temporal, procs: procs}

	measurements := []struct {
		column, title, ns string
		n                 int
	}{{"one instance", "One instance", nsOne, 1}, {fmt.Sprintf("%d at once", cfg.many), fmt.Sprintf("%d instances created at once", cfg.many), nsMany, cfg.many}}
	var failures []error
	figures := map[string][]bench.Figure{}
	for i, m := range measurements {
		rb := &bench.Report{}
		err := b.section(ctx, rb, cfg, m.title, m.ns, m.n, i < len(measurements)-1)
		if err != nil {
			failures = append(failures, err)
		}
		figures[m.column] = rb.Headlines()
		r.Printf("%s", rb.String())
	}
	var columns []string
	for _, m := range measurements {
		columns = append(columns, m.column)
	}
	r.Heading(2, "Figures")
	summary(r, columns, figures)

	if outside := e.OutsideConnections(); len(outside) > 0 {
		r.Printf("\n**Connections outside loopback were seen** (%d):\n", len(outside))
		r.Code(strings.Join(outside[:min(10, len(outside))], "\n"))
	} else {
		r.Printf("\nNo connection outside loopback was seen (socket tables sampled, logs read).\n")
	}
	if ctx.Err() != nil {
		r.Printf("\n**Run interrupted** (%v) after %s.\n", context.Cause(ctx), bench.FormatDuration(time.Since(runStart)))
	}
	r.Printf("\nRun took %s; load average %s at the end.\n", bench.FormatDuration(time.Since(runStart)), bench.LoadAverage())
	if err := os.WriteFile(cfg.out, []byte(r.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(r.String())
	log.Printf("bench: report written to %s", cfg.out)
	return errors.Join(failures...)
}

// section measures n instances created at once in ns: the timeline until Ready, then what
// each component used; with remove, the instances are deleted afterwards.
func (b *provisioningBench) section(ctx context.Context, r *bench.Report, cfg config, title, ns string, n int, remove bool) error {
	log.Printf("bench: %s", title)
	results, wall, err := b.measure(ctx, ns, n, cfg.timeout)
	r.Heading(2, title)
	timeline(r, results, wall)
	if err != nil {
		r.Printf("\n**Not all instances became Ready**: %v\n", err)
		b.diagnose(ctx, r, ns, results)
	}
	if n == 1 && len(results) == 1 && results[0].ready != 0 {
		b.stepDurations(ctx, r, ns, results[0].name)
	}
	if slices.ContainsFunc(results, func(res *result) bool { return res.ready != 0 }) {
		log.Printf("bench: %s: idle window of %s", title, cfg.idle)
		r.Heading(3, "CPU and memory of the played components")
		u, uerr := b.usage(ctx, ns, results, cfg.idle)
		if uerr != nil {
			r.Printf("Not measured: %v\n", uerr)
			err = errors.Join(err, uerr)
		} else {
			u.report(r)
		}
	}
	if !remove {
		return err
	}
	for _, res := range results {
		gone, ended, rerr := b.remove(ctx, ns, res.name, 3*time.Minute)
		if rerr != nil {
			r.Printf("\nDeleting %s/%s: %v\n", ns, res.name, rerr)
			err = errors.Join(err, rerr)
			continue
		}
		r.Printf("\nDeleted %s/%s: the Karmada was gone %s after the deletion, its last played process ended after %s.\n",
			ns, res.name, bench.FormatDuration(gone), bench.FormatDuration(ended))
	}
	return err
}

// summary is the key figures of each measurement side by side.
func summary(r *bench.Report, columns []string, figures map[string][]bench.Figure) {
	var names []string
	values := map[string]map[string]string{} // figure -> column -> value
	for _, c := range columns {
		for _, f := range figures[c] {
			if values[f.Name] == nil {
				values[f.Name] = map[string]string{}
				names = append(names, f.Name)
			}
			values[f.Name][c] = f.Value
		}
	}
	var rows [][]string
	for _, name := range names {
		row := []string{name}
		for _, c := range columns {
			v := values[name][c]
			if v == "" {
				v = "-"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	r.Table(append([]string{"figure"}, columns...), rows)
}
