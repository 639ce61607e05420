package mcs

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
)

func workflowOptions() workflow.RegisterOptions { return workflow.RegisterOptions{Name: WorkflowName} }

// Register registers the workflow and its activities with a worker.
func Register(r worker.Registry, a *act.Activities) {
	r.RegisterWorkflowWithOptions(MultiClusterService, workflowOptions())
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}
