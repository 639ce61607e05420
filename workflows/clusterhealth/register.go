package clusterhealth

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/activities/health"
)

// RegisterWorkflow registers the workflow under its name (the replayer needs no activities).
func RegisterWorkflow(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(ClusterHealth, workflow.RegisterOptions{Name: WorkflowName})
}

// Register registers the workflow and its activities with a worker.
func Register(r worker.Registry, a *health.Activities) {
	RegisterWorkflow(r)
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}
