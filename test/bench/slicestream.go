package bench

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// SliceStream is a MultiClusterService of its own whose provider slice a caller changes while
// measuring something else: the latency of section (a), without its report, for a program
// that compares it under different conditions (cmd/proxybench, during a token flood). Each
// stream is measured once; use one stream for each condition.
type SliceStream struct {
	b         *Bench
	st        stream
	provider  string
	consumers []string
	prefix    netip.Prefix
	seen      *sightings
	stop      context.CancelFunc
	measured  bool
}

// StartSliceStream creates the Service namespace/service in the control plane and the
// provider (member1), the provider's hand-written slice and a MultiClusterService to the
// consumers (member2..member4), watches both ends, and waits until the first address is in
// every consumer. updates is how many changes Measure will write. Close stops the watches.
func (b *Bench) StartSliceStream(ctx context.Context, r *Report, namespace, service string, updates int) (*SliceStream, error) {
	st := stream{namespace: namespace, service: service, slice: service + "-bench"}
	provider, consumers, prefix, err := b.streamClusters(updates)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	seen, err := b.setupStream(ctx, r, st, provider, consumers, prefix)
	if err != nil {
		stop()
		return nil, err
	}
	return &SliceStream{b: b, st: st, provider: provider, consumers: consumers, prefix: prefix, seen: seen, stop: stop}, nil
}

// Close stops the stream's watches.
func (s *SliceStream) Close() { s.stop() }

// Measure changes the slice's address opts.Updates times, opts.Interval apart, and waits up
// to opts.Settle for the last change to reach every consumer. It returns, for each change
// delivered to every consumer, the time from just before its write to the slowest consumer's
// watch showing it (or a later address), and how many changes were not delivered to every
// consumer (their write failed, or they did not arrive within opts.Settle).
func (s *SliceStream) Measure(ctx context.Context, opts LatencyOptions) (latencies []time.Duration, missing int, err error) {
	if s.measured {
		return nil, 0, errors.New("a slice stream is measured once: its addresses would repeat")
	}
	s.measured = true
	u, err := s.b.writeUpdates(ctx, s.st, s.provider, s.prefix, opts)
	if err != nil {
		return nil, 0, err
	}
	last := u.lastWritten()
	if last == "" {
		return nil, 0, errors.Join(append([]error{errors.New("every write failed")}, u.errs...)...)
	}
	// Not settling is reported as missing changes, not as an error.
	_ = s.seen.waitSeen(ctx, s.consumers, last, opts.Settle)
	slowest := make([]time.Duration, len(u.addresses))
	for _, c := range s.consumers {
		lat, _ := deliveries(s.seen, u, c)
		for i, d := range lat {
			if d < 0 || slowest[i] < 0 {
				slowest[i] = -1
			} else {
				slowest[i] = max(slowest[i], d)
			}
		}
	}
	latencies = delivered(slowest)
	return latencies, len(slowest) - len(latencies), nil
}
