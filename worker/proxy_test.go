package main

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without --proxy-tls-cert-file the proxy serves a certificate made at start, for localhost
// and 127.0.0.1 (the default --proxy-bind-address), valid for about a year.
func TestProxyTLSMakesItsCertificate(t *testing.T) {
	cfg, err := proxyTLS("", "", "")
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	cert, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.NoError(t, cert.VerifyHostname("localhost"))
	assert.NoError(t, cert.VerifyHostname("127.0.0.1"))
	assert.Error(t, cert.VerifyHostname("example.com"))
	assert.Contains(t, cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	assert.Equal(t, "karmadaflow-proxy", cert.Subject.CommonName)
	assert.WithinDuration(t, time.Now().AddDate(1, 0, 0), cert.NotAfter, 48*time.Hour)
	assert.Nil(t, cfg.ClientCAs, "no --proxy-client-ca-file: no client certificates")
}
