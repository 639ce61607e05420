package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// agentWorkExecutor applies the Works of the agent's execution namespace to its member, with
// Work execution's applier: each Work that changes, and every Work in a full pass at start,
// every period and when asked (fullPassNow). The control plane's full pass makes the
// namespace; the agent may not.
type agentWorkExecutor struct {
	cluster string
	apply   *executionactivities.Activities
	period  time.Duration
	kick    chan struct{}
	logger  *zap.Logger
}

// key is the key of a Work the executor applies: the Works the agent itself writes and those
// that ask it to collect, which are never applied, are not its concern.
func (e *agentWorkExecutor) key(obj any) (string, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if w, ok := obj.(*unstructured.Unstructured); ok && (mcsactivities.IsCollected(w) || mcsactivities.IsCollectRequest(w)) {
		return "", nil
	}
	return trigger.ObjectKey(obj)
}

// handle applies one Work (or removes it, when it is being deleted); a failure is retried by
// the trigger with backoff.
func (e *agentWorkExecutor) handle(ctx context.Context, key string) error {
	_, name, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	res, err := e.apply.ApplyWorks(ctx, executionactivities.ApplyInput{Cluster: e.cluster, Works: []string{name}})
	if err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		return errors.New(res.Error)
	}
	return nil
}

// fullPassNow asks for a full pass as soon as the one running, if any, ends.
func (e *agentWorkExecutor) fullPassNow() {
	select {
	case e.kick <- struct{}{}:
	default: // one is asked for already
	}
}

// run makes full passes until ctx is done: at once, then every period, or after a failure
// sooner, with backoff.
func (e *agentWorkExecutor) run(ctx context.Context) {
	failures := 0
	for {
		wait := e.period
		if err := e.fullPass(ctx); err != nil {
			failures++
			wait = retryDelay(failures)
			e.logger.Warn("full pass of the Works failed, retrying", zap.String("cluster", e.cluster), zap.Duration("retryIn", wait), zap.Error(err))
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-time.After(wait):
		}
	}
}

// fullPass applies every Work of the namespace and removes what Works that are gone left.
func (e *agentWorkExecutor) fullPass(ctx context.Context) error {
	res, err := e.apply.ApplyWorks(ctx, executionactivities.ApplyInput{Cluster: e.cluster, All: true})
	switch {
	case err != nil:
		return err
	case res.ClusterGone:
		return fmt.Errorf("cluster %s is not registered in the control plane", e.cluster)
	case len(res.Failed) > 0:
		return fmt.Errorf("%d Works failed, the first: %s", len(res.Failed), res.Error)
	}
	e.logger.Debug("full pass of the Works", zap.String("cluster", e.cluster), zap.Int("applied", res.Applied), zap.Int("deleted", res.Deleted))
	return nil
}
