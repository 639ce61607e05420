package execution

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

func memberObject(version, workUID, generation string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("ns")
	obj.SetName("cm")
	obj.SetResourceVersion(version)
	obj.SetAnnotations(map[string]string{naming.AnnotationWorkUID: workUID, naming.AnnotationWorkGeneration: generation})
	return obj
}

func workAt(uid string, generation int64) *unstructured.Unstructured {
	work := &unstructured.Unstructured{}
	work.SetUID(types.UID(uid))
	work.SetGeneration(generation)
	return work
}

func TestWrittenVersionsSkipOnlyWhatIsStillAsWritten(t *testing.T) {
	written := NewWrittenVersions(10)
	work := workAt("u1", 2)
	assert.False(t, written.unchanged("m1", memberObject("5", "u1", "2"), work), "nothing written yet")

	written.wrote("m1", memberObject("5", "u1", "2"))
	assert.True(t, written.unchanged("m1", memberObject("5", "u1", "2"), work), "as written, same stamp")
	assert.False(t, written.unchanged("m1", memberObject("6", "u1", "2"), work), "changed by someone since")
	assert.False(t, written.unchanged("m1", memberObject("5", "u1", "2"), workAt("u1", 3)), "a later generation of the Work")
	assert.False(t, written.unchanged("m1", memberObject("5", "u1", "2"), workAt("u2", 2)), "another Work of that name")
	assert.False(t, written.unchanged("m2", memberObject("5", "u1", "2"), work), "another member")

	var none *WrittenVersions
	none.wrote("m1", memberObject("5", "u1", "2"))
	assert.False(t, none.unchanged("m1", memberObject("5", "u1", "2"), work), "no record kept")
}

func TestWrittenVersionsForgetTheLeastRecentlyUsed(t *testing.T) {
	written := NewWrittenVersions(1)
	first, second := memberObject("5", "u1", "2"), memberObject("7", "u1", "2")
	second.SetName("other")
	written.wrote("m1", first)
	written.wrote("m1", second)
	assert.False(t, written.unchanged("m1", first, workAt("u1", 2)), "evicted")
	assert.True(t, written.unchanged("m1", second, workAt("u1", 2)))
}
