package mcs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

func heldWork(namespace, name, hash, provider string, deleting bool) unstructured.Unstructured {
	var w unstructured.Unstructured
	w.SetNamespace(namespace)
	w.SetName(name)
	w.SetAnnotations(map[string]string{naming.AnnotationManifestHash: hash})
	w.SetLabels(map[string]string{naming.LabelProvider: provider})
	if deleting {
		w.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
	}
	return w
}

func names(works []*unstructured.Unstructured) []string {
	var out []string
	for _, w := range works {
		out = append(out, w.GetNamespace()+"/"+w.GetName())
	}
	return out
}

func TestPlanWorkSyncWritesWhatDiffersAndRemovesWhatIsNotWanted(t *testing.T) {
	held := []unstructured.Unstructured{
		heldWork("es-a", "same", "h1", "p1", false),
		heldWork("es-a", "changed", "old", "p1", false),
		heldWork("es-a", "unwanted", "h1", "p1", false),
		heldWork("es-a", "other-provider", "h1", "p2", false),
	}
	same, changed, missing := heldWork("es-a", "same", "h1", "p1", false), heldWork("es-a", "changed", "new", "p1", false), heldWork("es-a", "missing", "h1", "p1", false)
	desired := []*unstructured.Unstructured{&same, &changed, &missing}

	plan := planWorkSync(held, desired, nil)
	assert.Equal(t, []string{"es-a/changed", "es-a/missing"}, names(plan.write))
	assert.Equal(t, []string{"es-a/unwanted", "es-a/other-provider"}, names(plan.remove))
	assert.Empty(t, plan.awaitingDeletion)

	plan = planWorkSync(held, desired, []string{"p1"})
	assert.Equal(t, []string{"es-a/unwanted"}, names(plan.remove), "only the listed providers' Works may go")
}

func TestPlanWorkSyncWaitsForAWorkBeingDeleted(t *testing.T) {
	held := []unstructured.Unstructured{
		heldWork("es-a", "wanted-again", "h1", "p1", true),
		heldWork("es-a", "going", "h1", "p1", true),
	}
	wanted := heldWork("es-a", "wanted-again", "h1", "p1", false)

	plan := planWorkSync(held, []*unstructured.Unstructured{&wanted}, nil)
	assert.Empty(t, plan.write, "a Work being deleted cannot be written until it is gone")
	assert.Equal(t, []string{"es-a/wanted-again"}, plan.awaitingDeletion)
	assert.Empty(t, plan.remove, "a Work already being deleted is not deleted again")
}

func TestPlanWorkSyncKeysByNamespace(t *testing.T) {
	held := []unstructured.Unstructured{heldWork("es-a", "svc", "h1", "", false)}
	inB := heldWork("es-b", "svc", "h1", "", false)

	plan := planWorkSync(held, []*unstructured.Unstructured{&inB}, nil)
	assert.Equal(t, []string{"es-b/svc"}, names(plan.write))
	assert.Equal(t, []string{"es-a/svc"}, names(plan.remove))
}

func dispatchedWork(name string, generation int64, applied metav1.ConditionStatus, observed int64) unstructured.Unstructured {
	w := unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
		"type": "Applied", "status": string(applied), "reason": "AppliedSuccessful", "message": "applied here",
		"observedGeneration": observed, "lastTransitionTime": "2026-01-01T00:00:00Z",
	}}}}}
	w.SetNamespace(naming.ExecutionNamespace("member2"))
	w.SetName(name)
	w.SetGeneration(generation)
	w.SetLabels(map[string]string{naming.LabelWorkRole: naming.RoleDispatched})
	return w
}

func TestAppliedCountsOnlyWorksAppliedAtTheirGeneration(t *testing.T) {
	works := []unstructured.Unstructured{
		dispatchedWork("current", 2, metav1.ConditionTrue, 2),
		dispatchedWork("older", 3, metav1.ConditionTrue, 2),
		dispatchedWork("unreported", 5, metav1.ConditionTrue, 0),
		dispatchedWork("failed", 1, metav1.ConditionFalse, 1),
	}
	got := appliedPerConsumer(works, []string{"member2"})
	assert.Equal(t, []ConsumerApplied{{Consumer: "member2", Works: 4, Applied: 2, Message: "applied here"}}, got)
	assert.False(t, allApplied(got))
	assert.True(t, allApplied(appliedPerConsumer(works[:1], []string{"member2"})))

	// A Work only behind its generation is on its way: pending, with no failure to report.
	behind := appliedPerConsumer(works[:2], []string{"member2"})
	assert.Equal(t, []ConsumerApplied{{Consumer: "member2", Works: 2, Applied: 1}}, behind)
}

func TestPlanWorkSyncExecutesHeldWorksNotAppliedAtTheirGeneration(t *testing.T) {
	applied := dispatchedWork("applied", 2, metav1.ConditionTrue, 2)
	behind := dispatchedWork("behind", 3, metav1.ConditionTrue, 2)
	failed := dispatchedWork("failed", 1, metav1.ConditionFalse, 1)
	suspended := dispatchedWork("suspended", 3, metav1.ConditionTrue, 2)
	assert.NoError(t, unstructured.SetNestedField(suspended.Object, true, "spec", "suspendDispatching"))
	held := []unstructured.Unstructured{applied, behind, failed, suspended}
	desired := []*unstructured.Unstructured{}
	for i := range held {
		desired = append(desired, held[i].DeepCopy())
	}

	plan := planWorkSync(held, desired, nil)
	assert.Empty(t, plan.write, "every Work is held as desired")
	assert.Equal(t, []string{"karmada-es-member2/behind", "karmada-es-member2/failed"}, names(plan.unapplied),
		"held as desired but not applied at its generation: executed again; a suspended one never")
}

// A Work being deleted that karmada-agent collected waits for the endpointsliceDispatch
// controller's finalizer, which karmadaflow, in that controller's place, releases.
func TestPlanWorkSyncReleasesTheSliceDispatchFinalizer(t *testing.T) {
	collected := heldWork("es-a", "collected-by-the-agent", "h1", "", true)
	collected.SetFinalizers([]string{naming.FinalizerSliceDispatch})
	other := heldWork("es-a", "going", "h1", "", true)
	other.SetFinalizers([]string{naming.FinalizerExecution})
	alive := heldWork("es-a", "alive", "h1", "", false)
	alive.SetFinalizers([]string{naming.FinalizerSliceDispatch})

	plan := planWorkSync([]unstructured.Unstructured{collected, other, alive}, nil, nil)
	assert.Equal(t, []string{"es-a/collected-by-the-agent"}, names(plan.release))
}
