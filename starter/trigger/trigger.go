// Package trigger turns informer events into Temporal signals, in the shape of client-go's
// sample-controller: event handlers put keys of relevant changes on a rate-limited work queue
// (which dedupes them), worker goroutines take keys off it and call a handler, normally one
// that sends SignalWithStartWorkflow to the workflow of the key. Failed keys are retried with
// the queue's rate limit, and with a longer delay when Temporal reports ResourceExhausted.
package trigger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// KeyFunc maps an object (or a cache.DeletedFinalStateUnknown tombstone) to the key of the
// workflow it concerns. An empty key means the object concerns no workflow and is ignored.
type KeyFunc func(obj any) (string, error)

// HandlerFunc acts on one key, e.g. sends SignalWithStartWorkflow to its workflow. An error
// requeues the key.
type HandlerFunc func(ctx context.Context, key string) error

// Defaults of Config.
const (
	DefaultWorkers        = 2
	DefaultExhaustedDelay = 10 * time.Second
)

// Config configures the trigger of one watched resource.
type Config struct {
	// Name names the trigger in logs and its work queue in metrics; unique per process.
	Name string
	// Informer delivers the resource's events. The trigger adds its handler; whoever owns the
	// informer (usually a shared informer factory) runs it.
	Informer cache.SharedInformer
	// Key maps objects to keys; nil means ObjectKey ("<namespace>/<name>" or "<name>").
	Key KeyFunc
	// Relevant decides whether an update sends anything; nil means GenerationOrMetadata with no
	// labels or annotations. Informer resyncs never do, additions and deletions always do.
	// Some core resources keep no generation (Services, ConfigMaps, Secrets: it stays 0), so
	// their triggers compare the content they read; EndpointSlices do keep one (the API server
	// raises it when endpoints or ports change).
	Relevant RelevantFunc
	// Handle acts on a key.
	Handle HandlerFunc
	// Workers is the number of goroutines calling Handle; 0 means DefaultWorkers.
	Workers int
	// Coalesce, if set, holds a key this long before handling it, so that the events of a
	// burst (the Works of one workflow changing one after another) send one signal, not one
	// each. Leave it zero where latency matters more than the number of signals.
	Coalesce time.Duration
	// HoldAfter, if set, is asked after a key was handled how long its next handling waits
	// (0: not at all); the events meanwhile are handled together. Unlike Coalesce it never
	// delays the first change after a quiet spell, so it can batch bursts where latency matters.
	HoldAfter func(key string) time.Duration
	// MetricsProvider, if set, exposes the work queue's metrics under Name.
	MetricsProvider workqueue.MetricsProvider
	// Logger logs failures; nil means no logs.
	Logger *zap.Logger
}

// DefaultRateLimiter retries a failing key with per-key exponential backoff from 5ms up to
// one minute (client-go's controller default goes up to 1000s, too long to wait after a
// Temporal outage), at most 10 retries per second overall with bursts of 100.
func DefaultRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Trigger watches one resource and calls its handler for the keys of relevant changes.
type Trigger struct {
	name           string
	key            KeyFunc
	relevant       RelevantFunc
	handle         HandlerFunc
	workers        int
	exhaustedDelay time.Duration
	coalesce       time.Duration
	holdAfter      func(key string) time.Duration
	logger         *zap.Logger
	store          cache.Store

	holdMu    sync.Mutex
	holdUntil map[string]time.Time

	queue        workqueue.TypedRateLimitingInterface[string]
	registration cache.ResourceEventHandlerRegistration
}

// New adds the trigger's event handler to cfg.Informer. Start the informer and call Run.
func New(cfg Config) (*Trigger, error) {
	if cfg.Name == "" || cfg.Informer == nil || cfg.Handle == nil {
		return nil, errors.New("trigger: Name, Informer and Handle are required")
	}
	t := &Trigger{
		name:           cfg.Name,
		key:            cfg.Key,
		relevant:       cfg.Relevant,
		handle:         cfg.Handle,
		workers:        cfg.Workers,
		exhaustedDelay: DefaultExhaustedDelay,
		coalesce:       cfg.Coalesce,
		holdAfter:      cfg.HoldAfter,
		logger:         cfg.Logger,
		store:          cfg.Informer.GetStore(),
		holdUntil:      map[string]time.Time{},
	}
	if t.key == nil {
		t.key = ObjectKey
	}
	if t.relevant == nil {
		t.relevant = GenerationOrMetadata(nil, nil)
	}
	if t.workers <= 0 {
		t.workers = DefaultWorkers
	}
	if t.logger == nil {
		t.logger = zap.NewNop()
	}
	t.logger = t.logger.With(zap.String("trigger", cfg.Name))
	t.queue = workqueue.NewTypedRateLimitingQueueWithConfig(DefaultRateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{
		Name:            cfg.Name,
		MetricsProvider: cfg.MetricsProvider,
	})

	registration, err := cfg.Informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { t.enqueue(obj) },
		UpdateFunc: t.onUpdate,
		DeleteFunc: t.enqueue,
	})
	if err != nil {
		t.queue.ShutDown()
		return nil, fmt.Errorf("trigger %s: adding event handler: %w", cfg.Name, err)
	}
	t.registration = registration
	return t, nil
}

// Name is the trigger's name.
func (t *Trigger) Name() string { return t.name }

// HasSynced reports whether the informer has synced and the trigger has seen every object of
// its initial list.
func (t *Trigger) HasSynced() bool { return t.registration.HasSynced() }

// Run waits for the initial list, queues the key of every object the informer holds, then
// handles keys with the configured number of workers until ctx is done; it returns once the
// workers have finished their current key. Until Run, the trigger only queues keys: a
// standby's triggers run once it leads, and act on what the informer holds then as well as on
// the events they queued (a deletion leaves nothing in the store).
func (t *Trigger) Run(ctx context.Context) {
	t.logger.Info("waiting for the informer to sync")
	if !cache.WaitForCacheSync(ctx.Done(), t.HasSynced) {
		t.queue.ShutDown()
		return
	}
	// Level-triggered: what Run handles does not depend on which events were seen before it.
	for _, obj := range t.store.List() {
		t.enqueue(obj)
	}
	t.logger.Info("handling changes", zap.Int("workers", t.workers))
	var wg sync.WaitGroup
	for range t.workers {
		wg.Go(func() {
			for t.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	// Workers empty the queue with a cancelled context, which drops the keys without retry.
	t.queue.ShutDown()
	wg.Wait()
}

// ShutDown stops the trigger's queue, as Run does when it returns: for a trigger that is
// dropped without having run, such as a standby's whose informer stops.
func (t *Trigger) ShutDown() { t.queue.ShutDown() }

// onUpdate enqueues the new object when the update is relevant. An informer resync delivers
// the object it already had, with the same resourceVersion.
func (t *Trigger) onUpdate(oldObj, newObj any) {
	oldMeta, err := meta.Accessor(oldObj)
	if err != nil {
		t.logger.Error("update of an object without metadata", zap.Error(err))
		return
	}
	newMeta, err := meta.Accessor(newObj)
	if err != nil {
		t.logger.Error("update of an object without metadata", zap.Error(err))
		return
	}
	if oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() || !t.relevant(oldMeta, newMeta) {
		return
	}
	t.enqueue(newObj)
}

func (t *Trigger) enqueue(obj any) {
	key, err := t.key(obj)
	if err != nil {
		t.logger.Error("computing key", zap.Error(err))
		return
	}
	switch {
	case key == "":
	case t.coalesce > 0:
		t.queue.AddAfter(key, t.coalesce)
	default:
		t.queue.Add(key)
	}
}

// processNext handles one key; it returns false when the queue shuts down.
func (t *Trigger) processNext(ctx context.Context) bool {
	key, shutdown := t.queue.Get()
	if shutdown {
		return false
	}
	defer t.queue.Done(key)
	if wait := t.held(key); wait > 0 {
		t.queue.AddAfter(key, wait)
		return true
	}

	err := t.handle(ctx, key)
	switch {
	case err == nil:
		t.queue.Forget(key)
		t.hold(key)
	case ctx.Err() != nil:
		// Shutting down: the key is handled again after the restart's initial list.
	case IsResourceExhausted(err):
		t.logger.Warn("Temporal is overloaded, retrying later", zap.String("key", key),
			zap.Duration("delay", t.exhaustedDelay), zap.Error(err))
		t.queue.AddAfter(key, t.exhaustedDelay)
	default:
		t.logger.Error("handling key failed, retrying", zap.String("key", key),
			zap.Int("retries", t.queue.NumRequeues(key)), zap.Error(err))
		t.queue.AddRateLimited(key)
	}
	return true
}

// held is how long key must still wait after its last handling.
func (t *Trigger) held(key string) time.Duration {
	t.holdMu.Lock()
	defer t.holdMu.Unlock()
	until, ok := t.holdUntil[key]
	if !ok {
		return 0
	}
	if wait := time.Until(until); wait > 0 {
		return wait
	}
	delete(t.holdUntil, key)
	return 0
}

// hold starts the wait HoldAfter asks for after key was handled.
func (t *Trigger) hold(key string) {
	if t.holdAfter == nil {
		return
	}
	d := t.holdAfter(key)
	t.holdMu.Lock()
	defer t.holdMu.Unlock()
	if d > 0 {
		t.holdUntil[key] = time.Now().Add(d)
	} else {
		delete(t.holdUntil, key)
	}
}
