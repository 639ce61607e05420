// Package e2e holds the end-to-end tests: one local environment (real kube-apiservers, etcd,
// controller managers, schedulers, KWOK and the Temporal dev server) is started for the whole
// package, with the real worker and starter binaries running against it.
package e2e

import (
	"context"
	"fmt"
	"log"
	"os"
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
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	e, err := env.Start(ctx, env.Options{Members: 3, Logf: log.Printf, TemporalBackend: os.Getenv(env.TemporalBackendVariable)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e
	log.Printf("e2e: environment up in %.1fs", time.Since(start).Seconds())

	// Two workers on the task queue: no test may depend on which one runs a task.
	svc, err = service.Start(ctx, e, service.Options{Workers: 2, UnhealthyGrace: testUnhealthyGrace, ProbeInterval: testProbeInterval,
		FailureThreshold: testFailureThreshold})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	log.Printf("e2e: workers and starter ready after %.1fs", time.Since(start).Seconds())
	return e.LoopbackCheckedExit(m.Run())
}
