package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/karmadaflow/karmadaflow/internal/version"
	"github.com/karmadaflow/karmadaflow/internal/workerdeployment"
	"github.com/karmadaflow/karmadaflow/test/service"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// strandedServices is how many MultiClusterServices the stranded-runs test runs.
const strandedServices = 3

// TestStrandedRunsMoveToTheCurrentVersion: the workers of the current version are killed, so
// that nothing wakes the runs pinned to it, and a newer release starts and becomes current.
// Its workers find the runs stranded on the older version and move them to theirs: a slice
// change made while the runs were stranded reaches the consumer, every run ends on the new
// version, and none counts as stranded (only runs on a newer version would). It needs a
// Temporal server with Worker Versioning (the PostgreSQL backend).
func TestStrandedRunsMoveToTheCurrentVersion(t *testing.T) {
	needsWorkerVersioning(t)
	ctx := context.Background()
	c := dialTemporal(t)
	m1, m2, _ := members(t)
	pkgBuild, err := version.UnstampedBuildID(svc.Binary("worker"))
	require.NoError(t, err)
	pkgVersion := worker.WorkerDeploymentVersion{DeploymentName: "karmadaflow", BuildID: pkgBuild}
	nextVersion := worker.WorkerDeploymentVersion{DeploymentName: "karmadaflow", BuildID: "e2e-rescue"}

	ns := testNamespace(t)
	apps := make([]string, strandedServices)
	ids := make([]string, 0, strandedServices+len(testEnv.Members))
	for i := range apps {
		apps[i] = fmt.Sprintf("app-%d", i)
		deployApp(t, testEnv.Member(m1), ns, apps[i], 1)
		createService(t, testEnv.ControlPlane, ns, apps[i])
		createMCS(t, ns, apps[i], mcsSpec([]string{m1}, []string{m2}))
		ids = append(ids, mcs.WorkflowID(ns, apps[i]))
	}
	for _, m := range testEnv.Members {
		ids = append(ids, clusterhealth.WorkflowID(m.Name))
	}
	observer := newEndpointObserver(testEnv.Member(m2), ns)
	go observer.run(t.Context())
	eventually(t, 2*time.Minute, func() error { return observer.all(apps, 1) })
	expectOnVersion(t, c, ids, pkgBuild)

	next, err := service.Build(ctx, testEnv, service.Options{Name: "rescue", Version: nextVersion.BuildID, Workers: 1,
		UnhealthyGrace: testUnhealthyGrace, ProbeInterval: testProbeInterval, FailureThreshold: testFailureThreshold,
		WorkerArgs: []string{"--stranded-after=5s"}})
	require.NoError(t, err)
	t.Cleanup(func() {
		backToPackageWorkers(t, c, pkgBuild, nextVersion)
		next.Stop()
	})

	// Killed, the current version's workers wake nothing; the package's starter still runs.
	svc.KillWorkers()
	require.NoError(t, next.StartWorkers(ctx))
	scale(t, testEnv.Member(m1), ns, apps[0], 2)
	changed := time.Now()
	took, err := observer.wait(apps[0], 2, changed, 3*time.Minute)
	require.NoError(t, err, "a change made while the runs were stranded")
	t.Logf("a change made while the runs were stranded on %s arrived after %v", workerdeployment.Name(pkgVersion), took)
	expectOnVersion(t, c, ids, nextVersion.BuildID)
	waitDrained(t, c, pkgVersion)

	for _, w := range next.Workers() {
		_, body := httpGet(t, "http://"+next.MetricsAddress(w)+"/metrics")
		stranded, ok := seriesValue(t, body, workerdeployment.StrandedRunsMetric)
		require.True(t, ok, "%s serves %s", w, workerdeployment.StrandedRunsMetric)
		require.Equal(t, 0.0, stranded, "runs on an older version are moved, not counted")
		expectNoNondeterminism(t, next, w)
	}
}
