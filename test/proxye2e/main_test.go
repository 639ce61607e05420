// Package proxye2e tests the global resource proxy end to end: the real kubectl, pointed at
// the proxy served by the real worker, against the local environment's real API servers.
package proxye2e

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/karmadaflow/karmadaflow/internal/pki"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

var (
	testEnv  *env.Env
	svc      *service.Service
	proxyURL string // the proxy's base URL
	proxyCA  string // file of the CA that signed the certificate the proxy serves
	kubectl  string // the real kubectl
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
	caFile, certFile, keyFile, err := servingCertificate(e.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proxyCA = caFile
	proxyURL = "https://" + address + "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy"
	// Cluster health is off: the Clusters stay Ready as registered, also while a test
	// freezes a member.
	svc, err = service.Start(ctx, e, service.Options{
		WorkerArgs: []string{
			"--enable-proxy", "--proxy-bind-address", address, "--proxy-tls-cert-file", certFile, "--proxy-tls-key-file", keyFile,
			"--proxy-request-timeout", "5s", "--enable-cluster-health=false",
		},
		StarterArgs: []string{"--enable-cluster-health=false"},
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
	return m.Run()
}

// servingCertificate writes a CA and a serving certificate for 127.0.0.1 it signed.
func servingCertificate(dir string) (caFile, certFile, keyFile string, err error) {
	ca, err := pki.NewAuthority("proxy-e2e-ca")
	if err != nil {
		return "", "", "", err
	}
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "proxy-e2e", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}, 24*time.Hour)
	if err != nil {
		return "", "", "", err
	}
	caFile, certFile, keyFile = filepath.Join(dir, "proxy-ca.crt"), filepath.Join(dir, "proxy.crt"), filepath.Join(dir, "proxy.key")
	for file, data := range map[string][]byte{caFile: ca.Pair().Cert, certFile: serving.Cert, keyFile: serving.Key} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}
