package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
)

// The token flood of issue 30: the MultiClusterService latency (an EndpointSlice change in
// member1 until the slowest consumer, member2..member4, shows it) and the latency of a caller
// the proxy knows, each measured without a flood and during a flood of random bad bearer
// tokens sent to the proxy. Every bad token costs the proxy a TokenReview on the control
// plane's API server, the server the MultiClusterService's workflows read and write.

type floodOptions struct {
	rate     int           // bad tokens sent a second
	updates  int           // slice changes measured in each phase
	interval time.Duration // between the starts of two slice changes
}

const (
	floodConnections = 64              // bad tokens in flight at most
	floodWarmUp      = 2 * time.Second // the flood runs this long before the changes start
	floodNamespace   = "tokenflood"    // of the phases' MultiClusterServices
	floodPath        = "/api/v1/namespaces/default/pods"
	callerInterval   = 50 * time.Millisecond // between the valid caller's GETs
	mcsSettle        = time.Minute           // for the last slice change to arrive
)

// answers are the status codes and latencies of requests, and the requests without an answer.
type answers struct {
	mu        sync.Mutex
	latencies map[int][]time.Duration // by status code
	refusal   string                  // the body of the first answer that was not a 2xx
	failed    int
	firstErr  error
}

func (a *answers) record(code int, body []byte, took time.Duration, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil && (code < 200 || code > 299) && a.refusal == "" {
		a.refusal = fmt.Sprintf("%d %.300s", code, strings.TrimSpace(string(body)))
	}
	if err != nil {
		if a.failed == 0 {
			a.firstErr = err
		}
		a.failed++
		return
	}
	if a.latencies == nil {
		a.latencies = map[int][]time.Duration{}
	}
	a.latencies[code] = append(a.latencies[code], took)
}

// all are the latencies of every answer, whatever its code.
func (a *answers) all() []time.Duration {
	var out []time.Duration
	for _, code := range slices.Sorted(maps.Keys(a.latencies)) {
		out = append(out, a.latencies[code]...)
	}
	return out
}

// codes is "200 ×412, 429 ×3" (and the requests without an answer).
func (a *answers) codes() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(a.latencies)) {
		parts = append(parts, fmt.Sprintf("%d ×%d", code, len(a.latencies[code])))
	}
	if a.failed > 0 {
		parts = append(parts, fmt.Sprintf("no answer ×%d (%v)", a.failed, a.firstErr))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// getWithToken sends url a GET with token and reads the answer.
func getWithToken(ctx context.Context, c *http.Client, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// flood sends a random bad token every 1/rate s to the first of floodConnections senders that
// is free; when none is, that token is not sent (skipped). It runs until stop is called.
type flood struct {
	answers answers
	skipped int
	start   time.Time
	took    time.Duration // from the start until the last answer, once stopped
	halt    context.CancelFunc
	done    sync.WaitGroup
}

func startFlood(ctx context.Context, c *http.Client, url string, rate int) *flood {
	f := &flood{start: time.Now()}
	ticking, halt := context.WithCancel(ctx)
	f.halt = halt
	sends := make(chan struct{})
	f.done.Go(func() {
		defer close(sends)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ticking.Done():
				return
			case <-tick.C:
			}
			select {
			case sends <- struct{}{}:
			default:
				f.skipped++
			}
		}
	})
	for range floodConnections {
		f.done.Go(func() {
			for range sends {
				begin := time.Now()
				code, body, err := getWithToken(ctx, c, url, "bad-"+rand.Text())
				f.answers.record(code, body, time.Since(begin), err)
			}
		})
	}
	return f
}

// stop stops sending and waits for the answers of the tokens in flight.
func (f *flood) stop() {
	f.halt()
	f.done.Wait()
	f.took = time.Since(f.start)
}

// caller is what a valid caller's GETs got.
type caller struct {
	answers
	// unserved is the longest time the caller went without a 200: between two 200 answers
	// (from the start or until the end when there was none).
	unserved time.Duration
}

// callRegularly GETs url with token every callerInterval (or as soon as the previous answer
// when it takes longer) until ctx ends.
func callRegularly(ctx context.Context, c *http.Client, url, token string) *caller {
	got := &caller{}
	served := time.Now()
	tick := time.NewTicker(callerInterval)
	defer tick.Stop()
	for {
		begin := time.Now()
		code, body, err := getWithToken(ctx, c, url, token)
		if ctx.Err() != nil {
			// The GET cut short by the end is not counted.
			got.unserved = max(got.unserved, time.Since(served))
			return got
		}
		got.record(code, body, time.Since(begin), err)
		if err == nil && code == http.StatusOK {
			got.unserved = max(got.unserved, time.Since(served))
			served = time.Now()
		}
		select {
		case <-ctx.Done():
			got.unserved = max(got.unserved, time.Since(served))
			return got
		case <-tick.C:
		}
	}
}

// floodPhase is what one phase measured.
type floodPhase struct {
	name       string
	mcs        []time.Duration // per slice change delivered to every consumer
	mcsMissing int
	caller     *caller
	flood      *flood  // nil without a flood
	busy       float64 // the machine's CPU utilization during the changes, 0..1
}

// measureTokenFlood runs the phase without a flood, then the phase during one, each on a
// MultiClusterService of its own, and reports both. token is a caller the proxy knows;
// tlsConfig trusts the proxy's serving certificate.
func measureTokenFlood(ctx context.Context, report io.Writer, b *bench.Bench, proxyURL string, tlsConfig *tls.Config, token string, opts floodOptions) error {
	if opts.rate <= 0 || opts.updates <= 0 || opts.interval <= 0 {
		return fmt.Errorf("token flood: -flood-rate, -flood-updates and -flood-interval must be positive")
	}
	url := proxyURL + floodPath
	var phases []floodPhase
	for _, p := range []struct {
		name, service string
		flooded       bool
	}{{"no flood", "quiet", false}, {"during flood", "flooded", true}} {
		log.Printf("token flood: %s", p.name)
		setup := &bench.Report{}
		stream, err := b.StartSliceStream(ctx, setup, floodNamespace, p.service, opts.updates)
		if err != nil {
			fmt.Fprint(report, setup.String())
			return fmt.Errorf("token flood, %s: %w", p.name, err)
		}
		phase := floodPhase{name: p.name}
		if p.flooded {
			floodClient := &http.Client{
				Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(), MaxIdleConnsPerHost: floodConnections},
				Timeout:   time.Minute,
			}
			phase.flood = startFlood(ctx, floodClient, url, opts.rate)
			time.Sleep(floodWarmUp)
		}
		calling, stopCalling := context.WithCancel(ctx)
		callerDone := make(chan *caller)
		go func() {
			callerClient := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone()}}
			callerDone <- callRegularly(calling, callerClient, url, token)
		}()
		cpuBefore, _ := bench.ReadMachineCPU()
		phase.mcs, phase.mcsMissing, err = stream.Measure(ctx, bench.LatencyOptions{Updates: opts.updates, Interval: opts.interval, Settle: mcsSettle})
		cpuAfter, _ := bench.ReadMachineCPU()
		phase.busy = bench.Utilization(cpuBefore, cpuAfter)
		stopCalling()
		phase.caller = <-callerDone
		if phase.flood != nil {
			phase.flood.stop()
		}
		stream.Close()
		if err != nil {
			return fmt.Errorf("token flood, %s: %w", p.name, err)
		}
		phases = append(phases, phase)
	}
	floodReport(report, phases, opts)
	return nil
}

func floodReport(report io.Writer, phases []floodPhase, opts floodOptions) {
	fmt.Fprintf(report, "\n## Token flood\n\n")
	fmt.Fprintf(report, "Two phases, each on a MultiClusterService of its own: %d EndpointSlice changes in member1, %s apart, "+
		"MCS latency from just before the write to the slowest consumer's watch (member2..member4) showing it; meanwhile the "+
		"control plane's admin, a caller the proxy knows, GETs %s through the proxy every %s (latency: sent until the body is read). "+
		"During the flood, %d random bad bearer tokens a second are sent to the same path, each to the first free of %d connections "+
		"(none free: not sent); the flood starts %s before the first change and ends after the last change arrived.\n\n",
		opts.updates, opts.interval, floodPath, callerInterval, opts.rate, floodConnections, floodWarmUp)
	fmt.Fprintf(report, "| phase | machine CPU busy | MCS changes delivered | MCS p50 | MCS p99 | MCS max |\n|---|---|---|---|---|---|\n")
	for _, p := range phases {
		fmt.Fprintf(report, "| %s | %.0f%% | %d/%d | %s |\n", p.name, 100*p.busy, len(p.mcs), len(p.mcs)+p.mcsMissing, percentiles(p.mcs))
	}
	fmt.Fprintf(report, "\n| phase | caller GETs | answers | 200 p50 | 200 p99 | 200 max | longest without a 200 |\n|---|---|---|---|---|---|---|\n")
	for _, p := range phases {
		c := p.caller
		fmt.Fprintf(report, "| %s | %d | %s | %s | %s |\n", p.name, len(c.all())+c.failed, c.codes(),
			percentiles(c.latencies[http.StatusOK]), ms(c.unserved))
	}
	for _, p := range phases {
		if p.caller.refusal != "" {
			fmt.Fprintf(report, "\nThe caller's first refusal, %s: `%s`\n", p.name, p.caller.refusal)
		}
	}
	for _, p := range phases {
		f := p.flood
		if f == nil {
			continue
		}
		a := &f.answers
		total := len(a.all())
		fmt.Fprintf(report, "\nBad tokens %s: %d answers in %s (%.0f/s; %d/s sent at most), %d not sent for want of a free connection; answers: %s.\n\n",
			p.name, total, bench.FormatDuration(f.took), float64(total)/f.took.Seconds(), opts.rate, f.skipped, a.codes())
		fmt.Fprintf(report, "| bad-token answers | count | per second | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
		rows := slices.Sorted(maps.Keys(a.latencies))
		for _, code := range rows {
			l := a.latencies[code]
			fmt.Fprintf(report, "| %d | %d | %.0f | %s |\n", code, len(l), float64(len(l))/f.took.Seconds(), percentiles(l))
		}
		if len(rows) > 1 {
			fmt.Fprintf(report, "| all | %d | %.0f | %s |\n", total, float64(total)/f.took.Seconds(), percentiles(a.all()))
		}
	}
}

// percentiles are the p50, p99 and max cells of a table row.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "- | - | -"
	}
	s := bench.Summarize(ds)
	return ms(s.P50) + " | " + ms(s.P99) + " | " + ms(s.Max)
}
