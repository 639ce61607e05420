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
	st := crashStream
	provider, consumers, prefix, err := b.streamClusters(opts.Updates)
	if err != nil {
		return err
	}
	if err := b.Service.StartInstance(ctx, secondWorker, nil); err != nil {
		return fmt.Errorf("starting a second worker: %w", err)
	}
	defer b.Service.StopInstance(secondWorker)
	r.Printf("Two workers on one task queue. Provider %s, consumers %v; %d address changes of %s/%s started %s apart; "+
		"meanwhile the first worker is killed with SIGKILL %d times, evenly spread, and restarted at once each time "+
		"(the second one runs throughout). Latency as in (a).\n\n",
		provider, consumers, opts.Updates, st.namespace, st.slice, opts.Interval, opts.Kills)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, err := b.setupStream(ctx, r, st, provider, consumers, prefix)
	if err != nil {
		return err
	}

	killEvery := time.Duration(opts.Updates) * opts.Interval / time.Duration(opts.Kills+1)
	kills := make(chan crashLog, 1)
	go func() { kills <- b.killRepeatedly(ctx, opts.Kills, killEvery) }()
	start := time.Now()
	u, err := b.writeUpdates(ctx, st, provider, prefix, LatencyOptions{Updates: opts.Updates, Interval: opts.Interval})
	if err != nil {
		return err
	}
	k := <-kills
	last := u.lastWritten()
	if last == "" {
		return fmt.Errorf("every write failed, first: %w", u.errs[0])
	}
	settleErr := seen.waitSeen(ctx, append([]string{provider}, consumers...), last, opts.Settle)
	r.Printf("%d writes in %s; %d kills, one every %s; restart until ready p50 %s, max %s.\n\n",
		len(u.took), FormatDuration(time.Since(start)), len(k.restarts), FormatDuration(killEvery),
		FormatDuration(Summarize(k.restarts).P50), FormatDuration(Summarize(k.restarts).Max))
	if k.err != nil {
		r.Printf("**Killing and restarting failed**: %v\n\n", k.err)
	}

	worst := latencyTables(r, seen, u, provider, consumers)
	var problems []string
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
	r.Printf("\n**All consumers: p99 %s, longest stall (the slowest update) %s** with %d kills.\n\n",
		FormatDuration(d.P99), FormatDuration(d.Max), len(k.restarts))
	if k.err != nil {
		problems = append(problems, k.err.Error())
	}
	if len(problems) > 0 {
		r.Printf("**Problems**:\n\n")
		for _, p := range problems {
			r.Printf("- %s\n", p)
		}
		return fmt.Errorf("worker crash: %s", strings.Join(problems, "; "))
	}
	r.Printf("Every update arrived; the stream's Works and dispatched slices are exactly the expected ones.\n")
	return nil
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
