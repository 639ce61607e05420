package execution

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
)

// WrittenVersions remembers, per member object, the resourceVersion this process's last write
// of it returned. An object read at that version holds what that write left, and when it bears
// the stamp of the Work being applied (same uid and generation), applying that Work again would
// write the same: the apply is skipped. A full pass over thousands of unchanged objects then
// costs one read each instead of a read and a server-side apply, which the member's API server
// answers at nearly the cost of a real write. Any other writer changes the resourceVersion, so
// a drifted object is applied again. A miss (another worker wrote it, the record was evicted,
// the process restarted) only costs the apply the pass would have made anyway.
type WrittenVersions struct {
	versions *lru.Cache
}

// WrittenVersionsKept is how many member objects a worker remembers its writes of: about 25 MB,
// five objects for each of 20,000 MultiClusterServices.
const WrittenVersionsKept = 100_000

// NewWrittenVersions remembers the writes to at most size objects, the least recently used
// forgotten first.
func NewWrittenVersions(size int) *WrittenVersions {
	return &WrittenVersions{versions: lru.New(size)}
}

// writtenKey names a member object: its cluster, apiVersion, kind, namespace and name.
func writtenKey(cluster string, obj *unstructured.Unstructured) string {
	return cluster + "/" + obj.GetAPIVersion() + "/" + obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// unchanged tells whether current, read from cluster, is still at the version this process
// wrote and bears work's stamp: applying work again would change nothing.
func (w *WrittenVersions) unchanged(cluster string, current, work *unstructured.Unstructured) bool {
	if w == nil || current == nil || current.GetResourceVersion() == "" {
		return false
	}
	uid, generation := appliedFrom(current)
	if uid != string(work.GetUID()) || generation != work.GetGeneration() {
		return false
	}
	version, ok := w.versions.Get(writtenKey(cluster, current))
	return ok && version == current.GetResourceVersion()
}

// wrote records the object a write to cluster returned.
func (w *WrittenVersions) wrote(cluster string, written *unstructured.Unstructured) {
	if w == nil || written == nil || written.GetResourceVersion() == "" {
		return
	}
	w.versions.Add(writtenKey(cluster, written), written.GetResourceVersion())
}
