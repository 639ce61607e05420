// Package apiserverpod plays the kubelet of a provisioned Karmada instance's API server pod in
// the local environment, where KWOK runs no container: it runs a real kube-apiserver from
// bin/ on <host node address>:<node port> with the certificates of the instance's cert
// Secret, sharing the environment's etcd under a prefix of its own. The host node's address
// is a loopback address, so the instance's NodePort endpoint reaches a real API server.
// Start runs one for a test.
package apiserverpod

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// Server is a running API server of an instance.
type Server struct {
	cmd     *exec.Cmd
	egress  *clusterEgress
	exited  chan struct{}
	LogPath string
}

// Start runs the API server of instance namespace/name on port and waits until it serves
// /readyz to the admin client certificate, TLS verified against the instance's CA.
func Start(ctx context.Context, e *env.Env, namespace, name string, port int32) (*Server, error) {
	secret, err := e.Host.Client().CoreV1().Secrets(namespace).Get(ctx, prov.NamesFor(name).Of(prov.SuffixCert), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("cert Secret of %s/%s: %w", namespace, name, err)
	}
	address := e.Host.NodeIP
	dir := filepath.Join(e.Dir, "apiserverpod-"+namespace+"-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	file := func(key string) string { return filepath.Join(dir, key) }
	for _, key := range []string{prov.KeyCACert, prov.KeyAPIServerCert, prov.KeyAPIServerKey, prov.KeyServiceAccountKey,
		prov.KeyServiceAccountPub, prov.KeyFrontProxyCACert, prov.KeyFrontProxyClientCert, prov.KeyFrontProxyClientKey} {
		if err := os.WriteFile(file(key), secret.Data[key], 0o600); err != nil {
			return nil, err
		}
	}
	root, err := env.RepoRoot()
	if err != nil {
		return nil, err
	}
	egress, egressConfig, err := startClusterEgress(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster egress of %s/%s: %w", namespace, name, err)
	}
	args := []string{
		"--etcd-servers=" + e.EtcdURL(),
		"--etcd-prefix=/apiserverpod-" + namespace + "-" + name,
		"--bind-address=" + address,
		"--advertise-address=" + address,
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
		"--egress-selector-config-file=" + egressConfig,
		"--profiling=false",
	}
	s := &Server{egress: egress, exited: make(chan struct{}), LogPath: filepath.Join(e.Dir, "logs", "apiserverpod-"+namespace+"-"+name+".log")}
	logFile, err := os.Create(s.LogPath)
	if err != nil {
		egress.stop()
		return nil, err
	}
	s.cmd = exec.Command(filepath.Join(root, "bin", "kube-apiserver"), args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		egress.stop()
		return nil, fmt.Errorf("starting kube-apiserver of %s/%s: %w", namespace, name, err)
	}
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.exited) }()
	if err := s.waitReady(ctx, secret.Data, address, port); err != nil {
		s.Stop()
		return nil, fmt.Errorf("kube-apiserver of %s/%s (log %s): %w", namespace, name, s.LogPath, err)
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, certs map[string][]byte, address string, port int32) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certs[prov.KeyCACert]) {
		return errors.New("no CA certificate in the cert Secret")
	}
	admin, err := tls.X509KeyPair(certs[prov.KeyAdminCert], certs[prov.KeyAdminKey])
	if err != nil {
		return err
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	url := "https://" + net.JoinHostPort(address, strconv.Itoa(int(port))) + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		select {
		case <-s.exited:
			return errors.New("exited")
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop ends the API server (SIGTERM, SIGKILL after 10 s) and waits for it.
func (s *Server) Stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.egress.stop()
}
