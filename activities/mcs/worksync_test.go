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
