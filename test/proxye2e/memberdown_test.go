// A member's API server frozen. The case runs among the disruptive cases, the last of them
// (disruptive_test.go).

package proxye2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testMemberDownWhileReady: a member that hangs but is still marked Ready does not fail a list
// or a watch: the others answer, with a warning naming the missing cluster, within the request
// timeout (5 s here).
func testMemberDownWhileReady(t *testing.T) {
	require.NoError(t, testEnv.FreezeMemberAPIServer("member2"))
	t.Cleanup(func() { require.NoError(t, testEnv.ThawMemberAPIServer("member2")) })

	begin := time.Now()
	out, err := kubectlAs("alice", "get", "pods", "-A", "-o", "json", "--request-timeout=60s")
	took := time.Since(begin)
	require.NoError(t, err, out)
	assert.Contains(t, out, "cluster member2 is unreachable")
	var l podList
	require.NoError(t, json.Unmarshal([]byte(stdoutJSON(out)), &l))
	got := l.clustersByName()
	assert.Equal(t, []string{"member1"}, got["default/web-1"])
	assert.Equal(t, []string{"member1"}, got["default/same"])
	assert.NotContains(t, got, "default/web-2")
	assert.Less(t, took, 20*time.Second, "the list waited for the hung member past the request timeout")

	// A watch starts with the reachable member and says which one is missing.
	resp := openWatch(t, "/api/v1/namespaces/default/pods?watch=true")
	defer resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Warning"), "member2")
	var e watchEvent
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "ADDED", e.Type)
	assert.Equal(t, "member1", e.Object.Metadata.Annotations["resource.karmada.io/cached-from-cluster"])
}
