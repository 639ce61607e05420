// Package proxye2e tests the global resource proxy end to end: the real kubectl, pointed at
// the proxy served by the real worker, against the local environment's real API servers.
package proxye2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

var (
	testEnv  *env.Env
	svc      *service.Service
	proxyURL string // the proxy's base URL
	proxyCA  string // file of the CA that signed the certificate the proxy serves
	kubectl  string // the real kubectl

	// proxyCert and proxyKey are the proxy's serving certificate (for 127.0.0.1, any port) and key.
	proxyCert, proxyKey string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := env.Start(ctx, env.Options{Members: 2, Logf: log.Printf})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectl = filepath.Join(root, "bin", "kubectl")

	address, err := service.FreeAddress()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	files, err := e.WriteProxyFiles(address)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proxyCA, proxyURL = files.CAFile, files.URL
	proxyCert, proxyKey = files.CertFile, files.KeyFile
	// Cluster health is off: the Clusters stay Ready as registered, also while a test
	// freezes a member. Of the two workers on the task queue, the first serves the proxy.
	svc, err = service.Start(ctx, e, service.Options{
		Workers:    2,
		WorkerArgs: []string{"--enable-cluster-health=false"},
		FirstWorkerArgs: []string{
			"--enable-proxy", "--proxy-bind-address", address, "--proxy-tls-cert-file", files.CertFile, "--proxy-tls-key-file", files.KeyFile,
			"--proxy-request-timeout", "5s",
		},
		StarterArgs: []string{"--enable-cluster-health=false"},
		ChartValues: []string{"proxy.enabled=true", "proxy.tls.existingSecret=proxy-serving"}, // the proxy's impersonation (the chart requires a certificate; the worker is given files)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	if err := setUp(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
		return 1
	}
	return e.LoopbackCheckedExit(m.Run())
}
