// Package e2e holds the end-to-end tests: one local environment (real kube-apiservers, etcd,
// controller managers, schedulers, KWOK and the Temporal dev server) is started for the whole
// package, with the real worker and starter binaries running against it.
//
// With KARMADAFLOW_TEST_MODE=besideKarmada the control plane is a Karmada control plane run by
// Karmada's own components (env.Options.BesideKarmada) and karmadaflow runs beside them, as
// the chart's mode besideKarmada installs it: without Work execution, cluster health and
// provisioning, which Karmada's components do. Tests of those are standaloneOnly.
package e2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

var (
	testEnv *env.Env
	svc     *service.Service
)

// Settings the service runs with in the tests: short enough to test the unhealthy-cluster
// grace and health probing in seconds.
const (
	testUnhealthyGrace   = 20 * time.Second
	testProbeInterval    = 2 * time.Second
	testFailureThreshold = 5 * time.Second
	// testPullClusterLeaseGrace: a Pull cluster whose agent is gone leaves Ready after it, as
	// beside Karmada after the test environment's --cluster-monitor-grace-period (10s).
	testPullClusterLeaseGrace = 10 * time.Second
)

// The test mode variable and the value that runs the suite beside a real Karmada.
const (
	testModeVariable      = "KARMADAFLOW_TEST_MODE"
	testModeBesideKarmada = "besideKarmada"
)

// besideKarmada tells whether the suite runs beside Karmada's own components.
func besideKarmada() bool { return os.Getenv(testModeVariable) == testModeBesideKarmada }

// standaloneOnly skips a test of what karmadaflow does only standalone (Work execution,
// cluster health, provisioning) when the suite runs beside Karmada, where Karmada does it.
func standaloneOnly(t *testing.T) {
	t.Helper()
	if besideKarmada() {
		t.Skipf("standalone mode only, not beside Karmada (%s=%s)", testModeVariable, testModeBesideKarmada)
	}
}

// besideKarmadaCapabilities are the worker's and the starter's flags beside Karmada, those
// the chart's mode besideKarmada gives them.
var besideKarmadaCapabilities = []string{"--enable-work-execution=false", "--enable-cluster-health=false", "--enable-provisioning=false"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	mode := os.Getenv(testModeVariable)
	if mode != "" && mode != testModeBesideKarmada {
		fmt.Fprintf(os.Stderr, "%s=%s: want empty (standalone) or %s\n", testModeVariable, mode, testModeBesideKarmada)
		return 1
	}
	e, err := env.Start(ctx, env.Options{Members: 3, Logf: log.Printf, TemporalBackend: os.Getenv(env.TemporalBackendVariable),
		BesideKarmada: besideKarmada()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e
	log.Printf("e2e: environment up in %.1fs", time.Since(start).Seconds())

	// Two workers on the task queue: no test may depend on which one runs a task.
	opts := service.Options{Workers: 2, UnhealthyGrace: testUnhealthyGrace, ProbeInterval: testProbeInterval,
		FailureThreshold: testFailureThreshold, PullClusterLeaseGrace: testPullClusterLeaseGrace}
	if besideKarmada() {
		opts.ChartValues = []string{"mode=" + testModeBesideKarmada}
		opts.WorkerArgs = slices.Clone(besideKarmadaCapabilities)
		opts.StarterArgs = slices.Clone(besideKarmadaCapabilities)
	}
	svc, err = service.Start(ctx, e, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	log.Printf("e2e: workers and starter ready after %.1fs", time.Since(start).Seconds())
	return e.LoopbackCheckedExit(m.Run())
}
