package execution

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A stamp is a member object's annotation, which a member user can write: one the Work in the
// control plane does not bear out is not believed, lest "work-generation: 999999" freeze the
// object. The stamps' race fix stands: an applier holding an older generation leaves alone
// what the writer of the newer one applied, even before that write is recorded.
func TestBelieveStamp(t *testing.T) {
	stampedAt := func(generation int64) *unstructured.Unstructured {
		return stamped(&unstructured.Unstructured{}, work("u1", generation), nil)
	}
	for _, tc := range []struct {
		name         string
		obj          *unstructured.Unstructured
		work, latest *unstructured.Unstructured
		want         bool
	}{
		{"execution holding a stale Work, the member at the latest", stampedAt(8), work("u1", 7), work("u1", 8), true},
		{"the writer's next generation applied ahead of its record", stampedAt(8), work("u1", 7), work("u1", 7), true},
		{"a forged stamp, applied from the latest Work", stampedAt(999999), work("u1", 7), work("u1", 7), false},
		{"a forged stamp, applied ahead of the record", stampedAt(999999), work("u1", 8), work("u1", 7), false},
		{"a stamp two ahead of the record", stampedAt(9), work("u1", 7), work("u1", 7), false},
		{"a forged stamp met by a stale applier: the latest one's to redo", stampedAt(999999), work("u1", 7), work("u1", 8), true},
		{"the Work created again since", stampedAt(999999), work("u1", 7), work("u2", 1), true},
	} {
		assert.Equal(t, tc.want, believeStamp(tc.obj, tc.work, tc.latest), tc.name)
	}
}
