package main

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/starter/ensure"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// ensureKinds are the workflows of the MultiClusterService capability that must run: one per
// MultiClusterService (also one being deleted: its workflow finishes the cleanup), and each
// Cluster's health probing and Work execution when enabled.
func (m *mcsTriggers) ensureKinds() []ensure.Kind {
	kinds := []ensure.Kind{{Name: kindMCS, WorkflowType: mcs.WorkflowName, TaskQueue: m.deps.taskQueue(naming.CapabilityMCS), Wanted: func() []trigger.Start {
		var starts []trigger.Start
		for _, obj := range m.mcs.GetStore().List() {
			u := obj.(*unstructured.Unstructured)
			starts = append(starts, m.mcsStart(u.GetNamespace(), u.GetName(), mcs.Change{Kind: mcs.ChangeSpec, DetectedAt: time.Now()}))
		}
		return starts
	}}}
	clusterKind := func(name, workflowType string, start func(cluster string) trigger.Start) ensure.Kind {
		return ensure.Kind{Name: name, WorkflowType: workflowType, TaskQueue: m.deps.taskQueue(naming.CapabilityCluster), Wanted: func() []trigger.Start {
			var starts []trigger.Start
			for _, cluster := range m.clusters.GetStore().ListKeys() {
				starts = append(starts, start(cluster))
			}
			return starts
		}}
	}
	if m.deps.Options.EnableClusterHealth {
		kinds = append(kinds, clusterKind(kindClusterHealth, clusterhealth.WorkflowName, m.clusterHealthStart))
	}
	if m.deps.Options.EnableWorkExecution {
		kinds = append(kinds, clusterKind(kindWorkExecution, execution.WorkflowName, func(cluster string) trigger.Start {
			return m.executionStart(cluster, execution.SignalResync, nil)
		}))
	}
	return kinds
}
