package main

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
	"github.com/karmadaflow/karmadaflow/workflows/searchattr"
)

// newKarmadaTrigger drives one provisioning workflow per Karmada object of the host cluster.
// A spec change (generation), the start of a deletion and the disable-cascading-deletion
// label reach it; status and finalizer updates (the workflow's own) do not. An object that is
// gone only gets a signal: its workflow, if still running, finishes.
func newKarmadaTrigger(deps dependencies) (*trigger.Trigger, error) {
	informer := deps.HostDynamic.ForResource(kube.Karmadas).Informer()
	cfg := deps.triggerConfig("karmadas", informer, func(ctx context.Context, key string) error {
		namespace, name, err := trigger.SplitKey(key)
		if err != nil {
			return err
		}
		obj, exists, _ := informer.GetStore().GetByKey(key)
		if !exists {
			return trigger.SignalIfRunning(ctx, deps.Temporal, provisioning.WorkflowID(namespace, name), provisioning.SignalChange, provisioning.Change{})
		}
		return trigger.SignalWithStart(ctx, deps.Temporal, trigger.Start{
			WorkflowID:       provisioning.WorkflowID(namespace, name),
			Workflow:         provisioning.WorkflowName,
			Args:             []any{provisioning.Input{Namespace: namespace, Name: name}},
			TaskQueue:        deps.Options.TaskQueue,
			SearchAttributes: searchattr.ForObject("Karmada", namespace, name),
			Signal:           provisioning.SignalChange,
			SignalArg:        provisioning.Change{Generation: generation(obj)},
		})
	})
	cfg.Relevant = trigger.GenerationOrMetadata([]string{operatorv1alpha1.LabelDisableCascadingDeletion}, nil)
	return trigger.New(cfg)
}

func generation(obj any) int64 {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetGeneration()
	}
	return 0
}
