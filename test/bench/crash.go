package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// CrashOptions configure the worker-crash measurement: a stream of slice updates while one of
// two workers on the task queue is killed and restarted again and again.
type CrashOptions struct {
	Updates  int
	Interval time.Duration
	Kills    int           // SIGKILLs of the first worker, spread evenly over the updates
	Settle   time.Duration // how long to wait for the last update to arrive
}

// crashVictim is the worker instance killed; secondWorker runs beside it all the time.
const (
	crashVictim  = "worker"
	secondWorker = "worker-2"
)

// WorkerCrash runs a second worker on the task queue, then writes opts.Updates slice changes
// while the first worker is killed with SIGKILL opts.Kills times and restarted each time. It
// reports the latency to every consumer and fails when an update did not arrive or when the
// Works or dispatched slices of the stream are not exactly the expected ones.
func (b *Bench) WorkerCrash(ctx context.Context, r *Report, opts CrashOptions) error {
	r.Heading(2, "(d) Worker crashes during a stream of updates")
	if err := b.Service.StartInstance(ctx, secondWorker, nil); err != nil {
		return fmt.Errorf("starting a second worker: %w", err)
	}
	defer b.Service.StopInstance(secondWorker)
	r.Printf("Two workers on one task queue; %d address changes started %s apart; meanwhile the first worker is killed "+
		"with SIGKILL %d times, evenly spread, and restarted at once each time (the second one runs throughout). "+
		"Latency as in (a).\n\n", opts.Updates, opts.Interval, opts.Kills)
	killEvery := time.Duration(opts.Updates) * opts.Interval / time.Duration(opts.Kills+1)
	d, err := b.disturbedStream(ctx, r, crashStream, LatencyOptions{Updates: opts.Updates, Interval: opts.Interval, Settle: opts.Settle},
		func(ctx context.Context) (string, error) {
			k := b.killRepeatedly(ctx, opts.Kills, killEvery)
			return fmt.Sprintf("%d kills, one every %s; restart until ready p50 %s, max %s.", len(k.restarts), FormatDuration(killEvery),
				FormatDuration(Summarize(k.restarts).P50), FormatDuration(Summarize(k.restarts).Max)), k.err
		})
	r.Printf("\n**All consumers: p99 %s, longest stall (the slowest update) %s** with %d kills.\n\n",
		FormatDuration(d.P99), FormatDuration(d.Max), opts.Kills)
	r.Headline("(d) worker crashes: latency p99", FormatDuration(d.P99))
	r.Headline("(d) worker crashes: longest stall", FormatDuration(d.Max))
	return err
}

// TemporalOptions configure the Temporal-crash measurement.
type TemporalOptions struct {
	Updates  int
	Interval time.Duration
	KillAt   time.Duration // after the first write
	Settle   time.Duration
}

// TemporalKilled writes a stream of slice changes while the Temporal server (or dev server) is
// killed with SIGKILL and started again. It reports how long Temporal was down and the
// latency to every consumer, and fails when an update did not arrive or something was
// duplicated.
func (b *Bench) TemporalKilled(ctx context.Context, r *Report, opts TemporalOptions) error {
	r.Heading(2, "(e) Temporal killed during a stream of updates")
	what := "The Temporal server process is killed; PostgreSQL keeps running, so every workflow survives."
	if b.Env.Temporal.Backend != env.TemporalPostgres {
		what = "The in-memory dev server is killed: every workflow is lost, and the starter starts them again " +
			"(a signal that finds none starts one; the ensure loop starts the rest)."
	}
	r.Printf("%s %d address changes started %s apart; Temporal is killed with SIGKILL %s after the first and started "+
		"again at once. Latency as in (a).\n\n", what, opts.Updates, opts.Interval, opts.KillAt)
	d, err := b.disturbedStream(ctx, r, temporalStream, LatencyOptions{Updates: opts.Updates, Interval: opts.Interval, Settle: opts.Settle},
		func(ctx context.Context) (string, error) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(opts.KillAt):
			}
			begin := time.Now()
			if err := b.Env.KillTemporal(); err != nil {
				return "", err
			}
			if err := b.Env.StartTemporal(ctx); err != nil {
				return "", err
			}
			outage := time.Since(begin)
			r.Headline("(e) Temporal killed: down for", FormatDuration(outage))
			return fmt.Sprintf("Temporal was down (kill until its frontend served again) for %s.", FormatDuration(outage)), nil
		})
	r.Printf("\n**All consumers: p99 %s, longest stall (the slowest update) %s.**\n\n", FormatDuration(d.P99), FormatDuration(d.Max))
	r.Headline("(e) Temporal killed: longest stall", FormatDuration(d.Max))
	return err
}

// disturbedStream sets a stream up, writes its updates while disturb runs, reports the
// latency tables and returns the all-consumer latency. It fails when an update did not reach
// every consumer, when the stream's Works or slices are not exactly the expected ones, or
// when disturb failed. disturb returns a sentence for the report.
func (b *Bench) disturbedStream(ctx context.Context, r *Report, st stream, opts LatencyOptions,
	disturb func(ctx context.Context) (string, error)) (Summary, error) {
	provider, consumers, prefix, err := b.streamClusters(opts.Updates)
	if err != nil {
		return Summary{}, err
	}
	r.Printf("Provider %s, consumers %v, slice %s/%s.\n\n", provider, consumers, st.namespace, st.slice)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, err := b.setupStream(ctx, r, st, provider, consumers, prefix)
	if err != nil {
		return Summary{}, err
	}

	type outcome struct {
		text string
		err  error
	}
	disturbed := make(chan outcome, 1)
	go func() {
		text, err := disturb(ctx)
		disturbed <- outcome{text, err}
	}()
	start := time.Now()
	u, err := b.writeUpdates(ctx, st, provider, prefix, opts)
	if err != nil {
		return Summary{}, err
	}
	o := <-disturbed
	last := u.lastWritten()
	if last == "" {
		return Summary{}, fmt.Errorf("every write failed, first: %w", u.errs[0])
	}
	settleErr := seen.waitSeen(ctx, append([]string{provider}, consumers...), last, opts.Settle)
	r.Printf("%d writes in %s. %s\n\n", len(u.took), FormatDuration(time.Since(start)), o.text)

	worst := latencyTables(r, seen, u, provider, consumers)
	var problems []string
	if o.err != nil {
		problems = append(problems, o.err.Error())
	}
	if settleErr != nil {
		problems = append(problems, settleErr.Error())
	}
	if len(u.errs) > 0 {
		problems = append(problems, fmt.Sprintf("%d writes failed, first: %v", len(u.errs), u.errs[0]))
	}
	for i, d := range worst {
		if d < 0 && !u.writes[i].IsZero() {
			problems = append(problems, fmt.Sprintf("update %d (%s) did not reach every consumer", i+1, u.addresses[i]))
			break
		}
	}
	problems = append(problems, b.checkStreamExact(ctx, st, provider, consumers, last)...)
	d := Summarize(delivered(worst))
	if len(problems) > 0 {
		r.Printf("\n**Problems**:\n\n")
		for _, p := range problems {
			r.Printf("- %s\n", p)
		}
		return d, fmt.Errorf("%s: %s", st.service, strings.Join(problems, "; "))
	}
	r.Printf("\nEvery update arrived; the stream's Works and dispatched slices are exactly the expected ones.\n")
	return d, nil
}

// crashLog is what killRepeatedly did: how long each restart took until ready.
type crashLog struct {
	restarts []time.Duration
	err      error
}

// killRepeatedly kills the victim worker n times, every interval, restarting it each time.
func (b *Bench) killRepeatedly(ctx context.Context, n int, every time.Duration) crashLog {
	var log crashLog
	for range n {
		select {
		case <-ctx.Done():
			log.err = ctx.Err()
			return log
		case <-time.After(every):
		}
		b.Service.Kill(crashVictim)
		begin := time.Now()
		if err := b.Service.StartComponent(ctx, crashVictim); err != nil {
			log.err = fmt.Errorf("restarting the worker: %w", err)
			return log
		}
		log.restarts = append(log.restarts, time.Since(begin))
	}
	return log
}

// checkStreamExact lists the problems with the stream's Works (one Service Work per
// involved cluster, one collected Work in the provider's execution namespace, one dispatched
// Work per consumer) and with each consumer's dispatched slices (exactly one, with address).
func (b *Bench) checkStreamExact(ctx context.Context, st stream, provider string, consumers []string, address string) []string {
	var problems []string
	list, err := b.controlPlane().Resource(kube.Works).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{networkingv1alpha1.LabelMCSName: st.service, networkingv1alpha1.LabelMCSNamespace: st.namespace}.String(),
	})
	if err != nil {
		return []string{fmt.Sprintf("listing Works: %v", err)}
	}
	var got, want []string
	for _, w := range list.Items {
		got = append(got, w.GetNamespace()+" "+w.GetLabels()[naming.LabelWorkRole])
	}
	for _, c := range append([]string{provider}, consumers...) {
		want = append(want, naming.ExecutionNamespace(c)+" "+naming.RoleService)
	}
	want = append(want, naming.ExecutionNamespace(provider)+" "+naming.RoleCollected)
	for _, c := range consumers {
		want = append(want, naming.ExecutionNamespace(c)+" "+naming.RoleDispatched)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		problems = append(problems, fmt.Sprintf("Works (namespace role) %v, want %v", got, want))
	}
	for _, c := range consumers {
		list, err := b.kube(c).DiscoveryV1().EndpointSlices(st.namespace).List(ctx, metav1.ListOptions{
			LabelSelector: dispatchedSelector(st.service).String(),
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("listing the dispatched slices in %s: %v", c, err))
			continue
		}
		var addresses []string
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				addresses = append(addresses, ep.Addresses...)
			}
		}
		if len(list.Items) != 1 || !slices.Equal(addresses, []string{address}) {
			problems = append(problems, fmt.Sprintf("%s has %d dispatched slices with addresses %v, want one with %s", c, len(list.Items), addresses, address))
		}
	}
	return problems
}
