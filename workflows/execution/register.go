package execution

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/execution"
)

// Register registers the workflow and its activities with a worker.
func Register(r worker.Registry, a *act.Activities) {
	r.RegisterWorkflowWithOptions(WorkExecution, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}
