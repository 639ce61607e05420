package provisioning

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
)

// RegisterWorkflow registers the workflow under its name (the replayer needs no activities).
func RegisterWorkflow(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Karmada, workflow.RegisterOptions{Name: WorkflowName})
}

// Register registers the workflow and its activities with a worker.
func Register(r worker.Registry, a *act.Activities) {
	RegisterWorkflow(r)
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}
