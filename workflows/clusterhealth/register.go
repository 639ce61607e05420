package clusterhealth

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/activities/health"
)

// Register registers the workflow and its activities with a worker.
func Register(r worker.Registry, a *health.Activities) {
	r.RegisterWorkflowWithOptions(ClusterHealth, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}
