// Package karmadae2e shows that a provisioned Karmada is a working Karmada: the environment's
// pod runner plays every pod the provisioning workflow writes, from its manifest, with
// Karmada's own components built from its source; a member joins the new control plane in
// Push mode, Karmada's controllers mark it Ready, and a PropagationPolicy brings a Deployment
// into it.
package karmadae2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

var (
	testEnv *env.Env
	svc     *service.Service
)

// Namespaces of the instances the tests install.
const (
	nsDefault = "karmada-default"
	nsFull    = "karmada-full"
	// Day 2: an API endpoint other than the node's, immutable fields, certificate renewal
	// and an ordered upgrade.
	nsEndpoint  = "karmada-endpoint"
	nsImmutable = "karmada-immutable"
	nsRenew     = "karmada-renew"
	nsUpgrade   = "karmada-upgrade"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	e, err := env.Start(ctx, env.Options{Members: 1, PlayPods: true, Logf: log.Printf})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e
	// The worker's rights and its --provisioning-namespaces, as the chart gives both; the
	// upgrade's etcd keeps its data on a hostPath, which its namespace alone may ask for.
	namespaces := strings.Join([]string{nsDefault, nsFull, nsEndpoint, nsImmutable, nsRenew, nsUpgrade}, ",")
	svc, err = service.Start(ctx, e, service.Options{ChartValues: []string{"provisioning.namespaces={" + namespaces + "}"},
		WorkerArgs: []string{"--provisioning-namespaces=" + namespaces, "--host-access-namespaces=" + nsUpgrade}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	log.Printf("karmadae2e: environment, worker and starter ready after %.1fs", time.Since(start).Seconds())
	return e.LoopbackCheckedExit(m.Run())
}
