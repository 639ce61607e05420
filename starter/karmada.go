package main

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/starter/ensure"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// newKarmadaTrigger drives one provisioning workflow per Karmada object of the host cluster.
// A spec change (generation), the start of a deletion and the disable-cascading-deletion
// label reach it; status and finalizer updates (the workflow's own) do not. An object that is
// gone only gets a signal: its workflow, if still running, finishes.
func newKarmadaTrigger(deps dependencies) (*trigger.Trigger, error) {
	informer := deps.HostDynamic.ForResource(kube.Karmadas).Informer()
	if err := informer.SetTransform(transformKarmada); err != nil {
		return nil, err
	}
	cfg := deps.triggerConfig("karmadas", informer, func(ctx context.Context, key string) error {
		namespace, name, err := trigger.SplitKey(key)
		if err != nil {
			return err
		}
		obj, exists, _ := informer.GetStore().GetByKey(key)
		if !exists {
			return trigger.SignalIfRunning(ctx, deps.Temporal, deps.workflowID(provisioning.WorkflowID(namespace, name)), provisioning.SignalChange, provisioning.Change{})
		}
		return deps.signalWithStart(ctx, karmadaStart(deps, namespace, name, obj))
	})
	cfg.Relevant = trigger.GenerationOrMetadata([]string{operatorv1alpha1.LabelDisableCascadingDeletion}, nil)
	return trigger.New(cfg)
}

// karmadaKind keeps a provisioning workflow running for every Karmada, also one being deleted
// (its workflow finishes the cleanup and removes the finalizer).
func karmadaKind(deps dependencies) ensure.Kind {
	store := deps.HostDynamic.ForResource(kube.Karmadas).Informer().GetStore()
	return ensure.Kind{Name: kindKarmada, WorkflowType: provisioning.WorkflowName, TaskQueue: deps.taskQueue(naming.CapabilityProvisioning), Wanted: func() []trigger.Start {
		var starts []trigger.Start
		for _, obj := range store.List() {
			u := obj.(*unstructured.Unstructured)
			starts = append(starts, karmadaStart(deps, u.GetNamespace(), u.GetName(), u))
		}
		return starts
	}}
}

// karmadaStart is the start of a Karmada's provisioning workflow, with the change signal
// naming the generation seen.
func karmadaStart(deps dependencies, namespace, name string, obj any) trigger.Start {
	return trigger.Start{
		WorkflowID:          deps.workflowID(provisioning.WorkflowID(namespace, name)),
		Workflow:            provisioning.WorkflowName,
		Args:                []any{provisioning.Input{Namespace: namespace, Name: name}},
		TaskQueue:           deps.taskQueue(naming.CapabilityProvisioning),
		WorkflowTaskTimeout: deps.Options.WorkflowTaskTimeout,
		SearchAttributes:    searchattr.ForObject(kindKarmada, namespace, name),
		Signal:              provisioning.SignalChange,
		SignalArg:           provisioning.Change{Generation: generation(obj)},
	}
}

func generation(obj any) int64 {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetGeneration()
	}
	return 0
}
