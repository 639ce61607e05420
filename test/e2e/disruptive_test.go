package e2e

import (
	"testing"

	"github.com/karmadaflow/karmadaflow/test/lastcases"
)

// disruptiveCases disturb the shared environment beyond their own namespace: they delete a
// member's Cluster, kill the workers, stop member API servers (that member's controller
// manager, scheduler and KWOK then reconnect with backoff for up to a minute, and beside
// Karmada its controller manager is restarted) or lose every workflow. They run after every
// other test of the package, which expect every member reachable and Ready and their
// workflows' histories kept, and in this order:
//
//   - the Cluster deletion first, before any member API server is stopped and its
//     components reconnect with backoff: it registers member3 again and waits for it Ready;
//   - the MultiClusterService faults next: workers killed mid-reconcile, member1's API server
//     stopped (shorter and longer than the grace), member3's Cluster deleted and registered
//     again;
//   - the Temporal state loss last: it restarts the in-memory Temporal server, so every
//     workflow's history is lost, terminates every running workflow, and ends by stopping
//     member2's API server; it leaves member1, stopped just before, alone.
//
// Each keeps its former top-level name as its subtest's: -run
// 'TestDisruptiveCasesLast/TestMCSUnhealthyProviderGrace' runs one.
var disruptiveCases = []lastcases.Case{
	{Name: "TestClusterDeletedEndsItsWorkflowsAndReleasesItsWorks", Run: testClusterDeletedEndsItsWorkflowsAndReleasesItsWorks},
	{Name: "TestMCSWorkerKilledMidReconcile", Run: testMCSWorkerKilledMidReconcile},
	{Name: "TestMCSUnhealthyProviderGrace", Run: testMCSUnhealthyProviderGrace},
	{Name: "TestMCSClusterLeavesAndJoins", Run: testMCSClusterLeavesAndJoins},
	{Name: "TestTemporalStateLoss", Run: testTemporalStateLoss},
}

// TestDisruptiveCasesLast runs disruptiveCases after every other test, one at a time in
// their order (see package lastcases).
func TestDisruptiveCasesLast(t *testing.T) { lastcases.Run(t, disruptiveCases) }
