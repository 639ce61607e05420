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
// collects its EndpointSlices into Works of its execution namespace, as karmada-agent's
// endpointsliceCollect controller does: karmadaflow's agent standalone, karmada-agent beside
// Karmada. The workflow reads what was collected; dispatching stays here: it reads and writes
// Works of the control plane only.

// changePullClusters versions collecting a Pull provider's slices through its agent. It is
// asked only when a Pull provider is collected, so other histories hold no marker.
const changePullClusters = "pull-clusters"

// changeAgentCollectsIntoWorks versions reading, standalone, what karmadaflow's agent collected
// into Works (as beside Karmada), where before the collection was an activity on the Pull
// cluster's own task queue: the agent holds no Temporal credential any more. It is asked only
// when a Pull provider is collected standalone, so other histories hold no marker.
const changeAgentCollectsIntoWorks = "pull-agent-collects-into-works"

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

// collectPull has a Pull provider's slices collected by the agent in the member, karmadaflow's
// or, beside Karmada, karmada-agent, and reads its collection.
func collectPull(ctx workflow.Context, obs act.Observation, in act.CollectInput) workflow.Future {
	agent := "karmada-agent"
	if !obs.KarmadaAgents {
		if workflow.GetVersion(ctx, changeAgentCollectsIntoWorks, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return collectOnAgent(ctx, in)
		}
		agent = "its agent"
	}
	read := summary.Local(ctx, "read the EndpointSlices of %s that %s collected from %s", in.MCS, agent, in.Provider)
	return workflow.ExecuteLocalActivity(read, activities.ReadAgentCollection, in)
}

// collectOnAgent has the agent of a Pull provider collect its slices, on the cluster's own
// task queue: the branch of runs from before changeAgentCollectsIntoWorks, for replay only
// (no agent polls that queue any more).
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
