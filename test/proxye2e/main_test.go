// Package proxye2e tests the global resource proxy end to end: the real kubectl, pointed at
// the proxy served by the real worker, against the local environment's real API servers.
package proxye2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log"
	"math/big"
	"net"
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
	proxyCA  string // file of the certificate the proxy serves (its own CA)
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
	certFile, keyFile, err := servingCertificate(e.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proxyCA = certFile
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

// servingCertificate writes a self-signed certificate for 127.0.0.1, which clients trust as
// its own CA.
func servingCertificate(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "proxy-e2e"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "proxy.crt"), filepath.Join(dir, "proxy.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
