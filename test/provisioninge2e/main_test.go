// Package provisioninge2e holds the end-to-end tests of Karmada provisioning: one local
// environment (real etcd and kube-apiservers, kube-controller-manager, kube-scheduler and KWOK
// in the host cluster, and the Temporal dev server) with the real worker and starter binaries.
// Karmada objects are created in the host cluster and the outcome is read back from it; the
// API server of one installed control plane is a real kube-apiserver the test starts with the
// certificates the workflow generated.
package provisioninge2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

var (
	testEnv  *env.Env
	svc      *service.Service
	temporal client.Client
	// tarballAddress is where tests serve the tarballs their Karmadas name in spec.crdTarball
	// (serveTarballs): http://<it>/tarballs/ is what the workers allow.
	tarballAddress string
	// provisioningNamespaces are the namespaces of the tests' Karmada objects: the chart's
	// provisioning.namespaces, where alone the workers may write.
	provisioningNamespaces = []string{"tenant-np", "tenant-cip", "tenant-lb", "tenant-remote", "tenant-invalid", "tenant-loss",
		"tenant-other", "tenant-bomb", "tenant-fetch", "tenant-hostile", nsHostAccess}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	e, err := env.Start(ctx, env.Options{Members: 1, Logf: log.Printf, TemporalBackend: os.Getenv(env.TemporalBackendVariable)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e
	if tarballAddress, err = service.FreeAddress(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Two workers on the task queue. They may write a control plane's objects only in the
	// namespaces of the tests' Karmada objects (the chart's RBAC, and its
	// --provisioning-namespaces), download a spec.crdTarball only from the tests' tarballs, and
	// give pods host access only in nsHostAccess.
	namespaces := strings.Join(provisioningNamespaces, ",")
	svc, err = service.Start(ctx, e, service.Options{Workers: 2, ChartValues: []string{"provisioning.namespaces={" + namespaces + "}"},
		WorkerArgs: []string{"--provisioning-namespaces=" + namespaces, "--crd-tarball-allowed-url-prefixes=http://" + tarballAddress + "/tarballs/",
			"--host-access-namespaces=" + nsHostAccess}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	temporal, err = e.Temporal.Dial(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer temporal.Close()
	log.Printf("provisioninge2e: environment, workers and starter ready after %.1fs", time.Since(start).Seconds())
	return e.LoopbackCheckedExit(m.Run())
}
