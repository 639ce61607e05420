package temporalcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	certutil "k8s.io/client-go/util/cert"
)

// These tests dial real loopback sockets: a closed port, and TLS listeners that complete
// or refuse handshakes the way a Temporal frontend behind TLS does.

func check(t *testing.T, address string, tlsConfig *tls.Config) error {
	t.Helper()
	c, err := client.NewLazyClient(client.Options{HostPort: address, ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return Server(ctx, c, address, "default", tlsConfig)
}

func TestUnreachableServerIsWorthWaitingFor(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := l.Addr().String()
	l.Close()

	err = check(t, address, nil)
	require.Error(t, err)
	t.Log(err)
	assert.False(t, IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "Temporal at "+address+" is unreachable")
}

// serve handles every connection l accepts, until the test ends.
func serve(t *testing.T, l net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				handle(conn)
			}()
		}
	}()
}

// tlsServer serves TLS handshakes on loopback with a self-signed certificate for 127.0.0.1
// (and requires a client certificate when clientAuth says so); it returns the address and a
// pool that trusts the certificate.
func tlsServer(t *testing.T, clientAuth tls.ClientAuthType) (string, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: clientAuth, NextProtos: []string{"h2"}})
	require.NoError(t, err)
	serve(t, l, func(conn net.Conn) {
		_ = conn.(*tls.Conn).Handshake()
		_, _ = conn.Read(make([]byte, 1)) // the client's first bytes; a refused handshake ends here
	})
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	return l.Addr().String(), pool
}

func TestUntrustedServerCertificateIsPermanent(t *testing.T) {
	address, _ := tlsServer(t, tls.NoClientCert)

	err := check(t, address, &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"})
	require.Error(t, err)
	t.Log(err)
	assert.True(t, IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "TLS with Temporal at "+address+" failed")
	assert.Contains(t, err.Error(), "x509")
}

func TestMissingClientCertificateIsPermanent(t *testing.T) {
	address, pool := tlsServer(t, tls.RequireAnyClientCert)

	err := check(t, address, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	require.Error(t, err)
	t.Log(err)
	assert.True(t, IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "TLS with Temporal at "+address+" failed")
}

func TestTLSToAPlainServerIsPermanent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serve(t, l, func(conn net.Conn) {
		_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) // not TLS
	})

	err = check(t, l.Addr().String(), &tls.Config{ServerName: "127.0.0.1"})
	require.Error(t, err)
	t.Log(err)
	assert.True(t, IsPermanent(err), "%v", err)
}
