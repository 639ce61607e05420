package provisioninge2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// startInnerAPIServer acts as the kubelet of an instance's API server pod: it runs a real
// kube-apiserver from bin/ on 127.0.0.1:<port> with the certificates of the instance's cert
// Secret, sharing the environment's etcd under a prefix of its own, and waits until it
// serves /readyz to the admin client certificate (TLS verified against the generated CA).
func startInnerAPIServer(t *testing.T, namespace, name string, port int32) {
	t.Helper()
	ctx := context.Background()
	secret, err := testEnv.Host.Client().CoreV1().Secrets(namespace).Get(ctx, prov.NamesFor(name).Of(prov.SuffixCert), metav1.GetOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	for _, key := range []string{prov.KeyCACert, prov.KeyAPIServerCert, prov.KeyAPIServerKey, prov.KeyServiceAccountKey,
		prov.KeyServiceAccountPub, prov.KeyFrontProxyCACert, prov.KeyFrontProxyClientCert, prov.KeyFrontProxyClientKey} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, key), secret.Data[key], 0o600))
	}
	root, err := env.RepoRoot()
	require.NoError(t, err)
	file := func(key string) string { return filepath.Join(dir, key) }
	args := []string{
		"--etcd-servers=" + testEnv.EtcdURL(),
		"--etcd-prefix=/inner-" + namespace + "-" + name,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(int(port)),
		"--cert-dir=" + filepath.Join(dir, "generated"),
		"--tls-cert-file=" + file(prov.KeyAPIServerCert),
		"--tls-private-key-file=" + file(prov.KeyAPIServerKey),
		"--client-ca-file=" + file(prov.KeyCACert),
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + file(prov.KeyServiceAccountPub),
		"--service-account-signing-key-file=" + file(prov.KeyServiceAccountKey),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--requestheader-client-ca-file=" + file(prov.KeyFrontProxyCACert),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + file(prov.KeyFrontProxyClientCert),
		"--proxy-client-key-file=" + file(prov.KeyFrontProxyClientKey),
		"--profiling=false",
	}
	logFile, err := os.Create(filepath.Join(testEnv.Dir, "logs", "inner-apiserver-"+namespace+"-"+name+".log"))
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(root, "bin", "kube-apiserver"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(secret.Data[prov.KeyCACert]))
	admin, err := tls.X509KeyPair(secret.Data[prov.KeyAdminCert], secret.Data[prov.KeyAdminKey])
	require.NoError(t, err)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	url := fmt.Sprintf("https://%s:%d/readyz", nodeAddress, port)
	eventually(t, 2*time.Minute, func() error {
		select {
		case <-exited:
			t.Fatalf("inner kube-apiserver exited; see %s", logFile.Name())
		default:
		}
		resp, err := httpClient.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s", url, resp.Status)
		}
		return nil
	})
}
