// Package searchattr owns the custom search attributes that let operators filter karmadaflow's
// runs in the Temporal UI: the kind, namespace, name and cluster of the object a workflow
// serves, and its reconcile phase. `worker bootstrap` registers them, temporalcheck checks
// them, the starter sets them when it starts a workflow and the workflows upsert them.
package searchattr

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The search attributes (all Keyword); the Temporal server must have them registered.
var (
	Kind      = temporal.NewSearchAttributeKeyKeyword("KarmadaKind")
	Namespace = temporal.NewSearchAttributeKeyKeyword("KarmadaNamespace")
	Name      = temporal.NewSearchAttributeKeyKeyword("KarmadaName")
	Cluster   = temporal.NewSearchAttributeKeyKeyword("KarmadaCluster")
	Phase     = temporal.NewSearchAttributeKeyKeyword("ReconcilePhase")
)

// Names lists the attribute names, for registering them with a server.
func Names() []string {
	return []string{Kind.GetName(), Namespace.GetName(), Name.GetName(), Cluster.GetName(), Phase.GetName()}
}

// ForObject are the attributes a starter sets when it starts the workflow of an object.
func ForObject(kind, namespace, name string) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{Kind.ValueSet(kind), Name.ValueSet(name)}
	if namespace != "" {
		updates = append(updates, Namespace.ValueSet(namespace))
	}
	return temporal.NewSearchAttributes(updates...)
}

// ForCluster are the attributes of a workflow that serves one member cluster.
func ForCluster(kind, cluster string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(Kind.ValueSet(kind), Name.ValueSet(cluster), Cluster.ValueSet(cluster))
}

// Identify upserts the object attributes when the run does not carry them yet (a run started
// without them, e.g. by hand from the CLI).
func Identify(ctx workflow.Context, kind, namespace, name string) error {
	if _, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(Kind); ok {
		return nil
	}
	updates := []temporal.SearchAttributeUpdate{Kind.ValueSet(kind), Name.ValueSet(name)}
	if namespace != "" {
		updates = append(updates, Namespace.ValueSet(namespace))
	}
	return workflow.UpsertTypedSearchAttributes(ctx, updates...)
}

// SetPhase upserts the reconcile phase.
func SetPhase(ctx workflow.Context, phase string) error {
	return workflow.UpsertTypedSearchAttributes(ctx, Phase.ValueSet(phase))
}
