package options

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/karmadaflow/karmadaflow/proxy"
)

func TestProxyAuthDefaultsAndFlags(t *testing.T) {
	o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, ProxyAuth{QPS: 20, Burst: 40, MaxInFlight: 8, CacheTTL: 10 * time.Second, FailureCacheTTL: 10 * time.Second,
		SourceQPS: 10, SourceBurst: 20}, o.ProxyAuth)
	assert.EqualValues(t, proxy.DefaultReviewSourceQPS, o.ProxyAuth.SourceQPS, "the proxy's own default")
	assert.EqualValues(t, proxy.DefaultReviewSourceBurst, o.ProxyAuth.SourceBurst, "the proxy's own default")

	o, err = Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", "--proxy-auth-qps=5", "--proxy-auth-burst=7", "--proxy-auth-max-in-flight=3",
		"--proxy-auth-cache-ttl=1m", "--proxy-auth-failure-cache-ttl=2s", "--proxy-auth-source-qps=2.5", "--proxy-auth-source-burst=4"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, ProxyAuth{QPS: 5, Burst: 7, MaxInFlight: 3, CacheTTL: time.Minute, FailureCacheTTL: 2 * time.Second,
		SourceQPS: 2.5, SourceBurst: 4}, o.ProxyAuth)

	_, err = Parse(Starter, []string{"--proxy-auth-qps=5"}, env(nil))
	assert.Error(t, err, "proxy flag accepted by the starter")
}

func TestProxyAuthValidation(t *testing.T) {
	for _, arg := range []string{"--proxy-auth-qps=0", "--proxy-auth-burst=0", "--proxy-auth-max-in-flight=0",
		"--proxy-auth-cache-ttl=0s", "--proxy-auth-failure-cache-ttl=-1s", "--proxy-auth-source-qps=0", "--proxy-auth-source-burst=-1"} {
		_, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", arg}, env(nil))
		assert.ErrorContains(t, err, arg[:len("--proxy-auth-")+3], arg)
	}
}

// TestProxyAuthClientHasItsOwnRateLimiter: the reviews' client does not share the control
// plane clients' rate limiter, and has the flags' rate.
func TestProxyAuthClientHasItsOwnRateLimiter(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(50, 100)
	controlPlane := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 100, RateLimiter: shared, UserAgent: "karmadaflow-worker"}
	o := Default(Worker)
	client, err := o.ProxyAuthClient(controlPlane)
	require.NoError(t, err)
	for _, limiter := range []flowcontrol.RateLimiter{
		client.AuthenticationV1().RESTClient().GetRateLimiter(),
		client.AuthorizationV1().RESTClient().GetRateLimiter(),
	} {
		require.NotNil(t, limiter)
		assert.NotSame(t, shared, limiter)
		assert.InDelta(t, 20, limiter.QPS(), 0.001)
	}
	assert.Same(t, shared, controlPlane.RateLimiter, "the control plane's configuration was changed")
}
