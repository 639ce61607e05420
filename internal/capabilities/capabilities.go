// Package capabilities tells the starter which capabilities have workers. Each capability has
// a task queue of its own (naming.CapabilityTaskQueue), which only workers running it poll; the
// starter starts a capability's workflows only while Temporal has seen a poller on its queue
// lately, so that no workflow waits on a queue nobody serves. The workers' and the starter's
// --enable-* flags may thus differ: what the starter wants and no worker runs waits, visibly
// (the karmadaflow_task_queue_pollers metric, a log line), until a worker for it comes.
package capabilities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// Defaults of Pollers.
const (
	// DefaultRecent is how lately a poller must have been seen to count. An idle worker's
	// long poll returns empty after about a minute and is renewed at once, so a live worker is
	// seen at least every minute or so; the server forgets a poller only five minutes after
	// its last poll, which would count a worker long gone.
	DefaultRecent = 2 * time.Minute
	// DefaultTTL is how long an answer about a queue is reused: the triggers ask at every
	// start, and one DescribeTaskQueue per queue and TTL is enough.
	DefaultTTL = 10 * time.Second
)

// Pollers answers whether workers poll a task queue, asking Temporal at most once per TTL per
// queue, and keeps karmadaflow_task_queue_pollers{task_queue} up to date.
type Pollers struct {
	client client.Client
	logger *zap.Logger
	gauge  *prometheus.GaugeVec
	now    func() time.Time

	mu      sync.Mutex
	answers map[string]answer
}

type answer struct {
	pollers int
	at      time.Time
}

// NewPollers returns a Pollers asking c, with its gauge registered with registerer.
func NewPollers(c client.Client, registerer prometheus.Registerer, logger *zap.Logger) (*Pollers, error) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karmadaflow_task_queue_pollers",
		Help: "Workers seen polling the workflow task queue in the last two minutes, as the starter last asked Temporal; the starter starts no workflow on a queue without any.",
	}, []string{"task_queue"})
	if err := registerer.Register(gauge); err != nil {
		return nil, err
	}
	return &Pollers{client: c, logger: logger, gauge: gauge, now: time.Now, answers: map[string]answer{}}, nil
}

// Polled reports whether a worker polled taskQueue for workflow tasks lately (DefaultRecent).
// Each answer of Temporal's that the queue has none is logged (at most once per TTL).
func (p *Pollers) Polled(ctx context.Context, taskQueue string) (bool, error) {
	p.mu.Lock()
	a, ok := p.answers[taskQueue]
	p.mu.Unlock()
	if ok && p.now().Sub(a.at) < DefaultTTL {
		return a.pollers > 0, nil
	}
	resp, err := p.client.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return false, fmt.Errorf("describing task queue %s: %w", taskQueue, err)
	}
	now := p.now()
	a = answer{pollers: Recent(resp.GetPollers(), now), at: now}
	p.mu.Lock()
	p.answers[taskQueue] = a
	p.mu.Unlock()
	p.gauge.WithLabelValues(taskQueue).Set(float64(a.pollers))
	if a.pollers == 0 {
		p.logger.Warn("no worker polls the task queue: its workflows are not started until one does",
			zap.String("taskQueue", taskQueue))
	}
	return a.pollers > 0, nil
}

// Recent counts the pollers seen within DefaultRecent of now.
func Recent(pollers []*taskqueuepb.PollerInfo, now time.Time) int {
	n := 0
	for _, poller := range pollers {
		if now.Sub(poller.GetLastAccessTime().AsTime()) < DefaultRecent {
			n++
		}
	}
	return n
}
