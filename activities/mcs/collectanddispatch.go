package mcs

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Collect-and-dispatch: one provider's slices read once, then collected and dispatched to its
// consumers at the same time.

// CollectAndDispatch does CollectEndpointSlices and, at the same time, DispatchEndpointSlices
// of the one provider to each consumer, from the slices just read: no consumer waits for the
// collected Work to be written. The Works stay the record, each written as the separate
// activities write it. Only a failure to read the provider fails the activity; a failure to
// write the collected Works or one consumer's is reported for it alone.
func (a *Activities) CollectAndDispatch(ctx context.Context, in CollectAndDispatchInput) (CollectAndDispatchResult, error) {
	res, err := a.collectAndDispatch(ctx, in)
	res.WorkCache = a.WorkCache.Instance()
	return res, a.Metrics.count("collect", err)
}

func (a *Activities) collectAndDispatch(ctx context.Context, in CollectAndDispatchInput) (CollectAndDispatchResult, error) {
	res := CollectAndDispatchResult{Dispatched: map[string]DispatchResult{}, DispatchErrs: map[string]string{}}
	collected, desired, err := a.readProviderSlices(ctx, CollectInput{MCS: in.MCS, Provider: in.Provider})
	if err != nil {
		return res, err
	}
	res.Collect = collected
	sources := map[string][]unstructured.Unstructured{in.Provider: derefWorks(sortedWorks(desired))}
	// One read serves both sides: the provider's collected Works and the consumers' dispatched ones.
	works, err := a.listWorks(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), naming.RoleCollected, naming.RoleDispatched)
	if err != nil {
		return res, err
	}
	// Every consumer exposes the same ports: the Service is read once for all of them.
	var portNames []string
	var portsErr error
	if len(in.Dispatch) > 0 {
		portNames, portsErr = a.exposedPortNames(ctx, in.MCS, in.Dispatch[0].Ports)
	}
	var mu sync.Mutex
	var group errgroup.Group
	group.Go(func() error {
		changed, err := a.syncWorks(ctx, worksIn(works, naming.ExecutionNamespace(in.Provider), naming.RoleCollected), desired, nil, nil)
		mu.Lock()
		defer mu.Unlock()
		res.Collect.Changed = changed
		res.CollectErr = errorText(a.Metrics.count("collect", err))
		return nil
	})
	for _, d := range in.Dispatch {
		group.Go(func() error {
			var out DispatchResult
			err := portsErr
			if err == nil {
				current := worksIn(works, naming.ExecutionNamespace(d.Consumer), naming.RoleDispatched)
				out, err = a.dispatchFrom(ctx, d, portNames, sources, current)
			}
			err = a.Metrics.count("dispatch", err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.DispatchErrs[d.Consumer] = err.Error()
				return nil
			}
			res.Dispatched[d.Consumer] = out
			return nil
		})
	}
	_ = group.Wait()
	return res, nil
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func derefWorks(works []*unstructured.Unstructured) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(works))
	for _, w := range works {
		out = append(out, *w)
	}
	return out
}
