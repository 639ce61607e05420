package options

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProxyNeedsACertificateItsCallersCanVerify: the proxy is served with a certificate of
// --proxy-tls-cert-file; the self-signed certificate made at start, which no caller can verify,
// only when asked for by name, for local development.
func TestProxyNeedsACertificateItsCallersCanVerify(t *testing.T) {
	_, err := Parse(Worker, []string{"--enable-proxy"}, env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--proxy-tls-cert-file and --proxy-tls-key-file (or, for local development only, --proxy-self-signed-certificate)")

	o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-tls-cert-file=a.crt", "--proxy-tls-key-file=a.key"}, env(nil))
	require.NoError(t, err)
	assert.False(t, o.ProxySelfSignedCertificate)
	o, err = Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate"}, env(nil))
	require.NoError(t, err)
	assert.True(t, o.ProxySelfSignedCertificate)

	_, err = Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", "--proxy-tls-cert-file=a.crt", "--proxy-tls-key-file=a.key"}, env(nil))
	assert.ErrorContains(t, err, "exclude each other")
	_, err = Parse(Worker, nil, env(nil))
	assert.NoError(t, err, "without the proxy no certificate is needed")
}
