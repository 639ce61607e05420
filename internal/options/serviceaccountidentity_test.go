package options

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/proxy"
)

func TestProxyServiceAccountIdentityFlag(t *testing.T) {
	o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, string(proxy.ServiceAccountPassthrough), o.ProxyServiceAccountIdentity, "today's behaviour, and Karmada's")

	for _, v := range proxy.ServiceAccountIdentities {
		o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", "--proxy-service-account-identity=" + string(v)}, env(nil))
		require.NoError(t, err, v)
		assert.Equal(t, string(v), o.ProxyServiceAccountIdentity)
	}
	_, err = Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", "--proxy-service-account-identity=allow"}, env(nil))
	assert.ErrorContains(t, err, "--proxy-service-account-identity must be passthrough, deny or map")
}
