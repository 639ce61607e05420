package karmadae2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// endpointAddress stands for a VIP in front of the host cluster's node port: a loopback
// address of no node of the environment (the host's is 127.0.0.10, members' 127.0.0.11 on).
const endpointAddress = "127.0.0.77"

// TestAPIEndpoint: a NodePort instance with spec.hostCluster.apiEndpoint at a forwarder to the
// node port is reached there: status.apiServerEndpoint and the admin kubeconfig name it, the
// API server certificate names its address, and a client of the admin kubeconfig verifies TLS
// through it.
func TestAPIEndpoint(t *testing.T) {
	in := instance{namespace: nsEndpoint, name: "endpoint",
		components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}}}
	fwd := startForwarder(t, endpointAddress, func(ctx context.Context) (string, error) {
		svc, err := testEnv.Host.Client().CoreV1().Services(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].NodePort == 0 {
			return "", errors.New("no node port yet")
		}
		return net.JoinHostPort(testEnv.Host.NodeIP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort))), nil
	})
	endpoint := "https://" + fwd.addr
	step := timer(t)

	createKarmadaSpec(t, in, operatorv1alpha1.KarmadaSpec{Components: in.components,
		HostCluster: &operatorv1alpha1.HostCluster{APIEndpoint: fwd.addr}})
	waitKarmadaReady(t, in, 10*time.Minute)
	if t.Failed() {
		t.FailNow()
	}
	step("Ready")

	k, _, err := getKarmada(in)
	require.NoError(t, err)
	assert.Equal(t, endpoint, k.Status.APIServerEndpoint, "status.apiServerEndpoint")
	require.NotNil(t, k.Status.SecretRef, "status.secretRef")
	require.NotNil(t, k.Status.APIServerService, "status.apiServerService")
	assert.NotZero(t, k.Status.APIServerService.NodePort)

	ctx := context.Background()
	secret, err := testEnv.Host.Client().CoreV1().Secrets(k.Status.SecretRef.Namespace).Get(ctx, k.Status.SecretRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
	require.NoError(t, err)
	assert.Equal(t, endpoint, cfg.Host, "server of the admin kubeconfig")
	require.False(t, cfg.Insecure)
	require.NotEmpty(t, cfg.CAData)
	before := fwd.connections.Load()
	assert.NotZero(t, before, "the worker reached the control plane through the apiEndpoint (InitControlPlane)")
	namespaces, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "list namespaces through %s, TLS verified", endpoint)
	assert.NotEmpty(t, namespaces.Items)
	assert.Greater(t, fwd.connections.Load(), before, "the client went through the forwarder")

	certs, err := testEnv.Host.Client().CoreV1().Secrets(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixCert), metav1.GetOptions{})
	require.NoError(t, err)
	serving, err := pki.ParseCert(certs.Data[prov.KeyAPIServerCert])
	require.NoError(t, err)
	assert.Contains(t, fmt.Sprint(serving.IPAddresses), endpointAddress, "IP SANs of the API server certificate")
	step("endpoint checked")

	checkDeletion(t, in)
	step("deleted")
}

// forwarder forwards TCP connections from addr to the address target returns, asked at each
// connection (the node port is known only once the Service exists).
type forwarder struct {
	addr        string
	connections atomic.Int64
	stop        chan struct{} // closed at cleanup: every connection ends
}

func startForwarder(t *testing.T, host string, target func(context.Context) (string, error)) *forwarder {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	f := &forwarder{addr: l.Addr().String(), stop: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = l.Close()
		close(f.stop)
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f.connections.Add(1)
			wg.Go(func() { f.forward(t, conn, target) })
		}
	})
	return f
}

func (f *forwarder) forward(t *testing.T, conn net.Conn, target func(context.Context) (string, error)) {
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, err := target(ctx)
	if err != nil {
		t.Logf("forwarder %s: no target: %v", f.addr, err)
		return
	}
	upstream, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Logf("forwarder %s: dialling %s: %v", f.addr, addr, err)
		return
	}
	defer upstream.Close()
	// The worker keeps its connections open: they end when the test does.
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-f.stop:
		case <-finished:
		}
		_ = conn.Close()
		_ = upstream.Close()
	}()
	done := make(chan struct{}, 2)
	for _, p := range [][2]net.Conn{{upstream, conn}, {conn, upstream}} {
		go func() {
			_, _ = io.Copy(p[0], p[1])
			// Half-close so that the other direction ends too.
			if c, ok := p[0].(*net.TCPConn); ok {
				_ = c.CloseWrite()
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
}
