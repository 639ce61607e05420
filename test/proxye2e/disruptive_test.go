package proxye2e

import (
	"testing"

	"github.com/karmadaflow/karmadaflow/test/lastcases"
)

// disruptiveCases leave member2 unreachable or hung for every caller of the proxy, and one
// restarts the workers and the starter. They run after every other test of the package,
// which expect both members reachable directly, and in this order:
//
//   - member2 behind a forward proxy first: for each of three schemes it points member2's
//     Cluster at a forward proxy under a name only that proxy resolves, restarting the
//     workers and the starter, then stops the forward proxy, leaving member2 unreachable;
//     its cleanup points member2 at its own address again, restarts them, and returns once
//     the proxy lists both members' pods;
//   - member2's API server frozen last: it stops it with SIGSTOP (connections accepted, never
//     answered) while its Cluster stays Ready, and its cleanup only resumes it, without
//     waiting for it to answer again.
//
// Each keeps its former top-level name as its subtest's: -run
// 'TestDisruptiveCasesLast/TestMemberDownWhileReady' runs one.
var disruptiveCases = []lastcases.Case{
	{Name: "TestMemberBehindForwardProxy", Run: testMemberBehindForwardProxy},
	{Name: "TestMemberDownWhileReady", Run: testMemberDownWhileReady},
}

// TestDisruptiveCasesLast runs disruptiveCases after every other test, one at a time in
// their order (see package lastcases).
func TestDisruptiveCasesLast(t *testing.T) { lastcases.Run(t, disruptiveCases) }
