package mcs

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// Pull providers: the control plane never dials a Pull cluster, so the agent inside it
// collects its EndpointSlices: karmadaflow's, on the cluster's own task queue, or beside
// Karmada, karmada-agent. Dispatching stays here: it reads and writes Works of the control
// plane only.

// changePullClusters versions collecting a Pull provider's slices through its agent. It is
// asked only when a Pull provider is collected, so other histories hold no marker.
const changePullClusters = "pull-clusters"

// agentScheduleToStart bounds how long a collection waits for the agent to take it: an agent
// that is down fails it, and the reconcile is retried with the usual backoff.
const agentScheduleToStart = 30 * time.Second

// isPull tells whether the observation names cluster as a Pull cluster.
func isPull(obs *act.Observation, cluster string) bool {
	if obs == nil {
		return false
	}
	i := slices.IndexFunc(obs.Clusters, func(c act.ClusterState) bool { return c.Name == cluster })
	return i >= 0 && obs.Clusters[i].Pull
}

// anyPull tells whether one of clusters is a Pull cluster: their slice changes are collected
// by the agent first, then dispatched, not by one activity here doing both.
func anyPull(obs act.Observation, clusters []string) bool {
	return slices.ContainsFunc(clusters, func(c string) bool { return isPull(&obs, c) })
}

// collectPull has a Pull provider's slices collected: by karmadaflow's agent in the member,
// or, beside Karmada, by its karmada-agent, whose collection is read here.
func collectPull(ctx workflow.Context, obs act.Observation, in act.CollectInput) workflow.Future {
	if obs.KarmadaAgents {
		read := summary.Local(ctx, "read the EndpointSlices of %s that karmada-agent collected from %s", in.MCS, in.Provider)
		return workflow.ExecuteLocalActivity(read, activities.ReadAgentCollection, in)
	}
	return collectOnAgent(ctx, in)
}

// collectOnAgent has the agent of a Pull provider collect its slices.
func collectOnAgent(ctx workflow.Context, in act.CollectInput) workflow.Future {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              naming.PullTaskQueue(naming.BaseTaskQueue(workflow.GetInfo(ctx).TaskQueueName), in.Provider),
		ScheduleToStartTimeout: agentScheduleToStart,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 2 * time.Second, MaximumAttempts: 3},
	})
	return workflow.ExecuteActivity(summary.Activity(ctx, "collect EndpointSlices of %s from %s, by its agent", in.MCS, in.Provider),
		activities.CollectEndpointSlices, in)
}
