package options

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// TestProxyLimitsDefaultsAreTheProxys: the flags' defaults are the proxy's own.
func TestProxyLimitsDefaultsAreTheProxys(t *testing.T) {
	o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, proxy.Limits{
		MaxRequestBodyBytes:             proxy.DefaultMaxRequestBodyBytes,
		MaxResponseBodyBytes:            proxy.DefaultMaxResponseBodyBytes,
		MaxBufferedBytes:                proxy.DefaultMaxBufferedBytes,
		MaxRequestsInFlight:             proxy.DefaultMaxRequestsInFlight,
		MaxLongRunningRequestsInFlight:  proxy.DefaultMaxLongRunningRequestsInFlight,
		MaxLongRunningRequestsPerCaller: proxy.DefaultMaxLongRunningRequestsPerCaller,
		MaxRequestsPerCaller:            proxy.DefaultMaxRequestsPerCaller,
		MaxBufferedBytesPerCaller:       proxy.DefaultMaxBufferedBytesPerCaller,
		RequestBodyTimeout:              proxy.DefaultRequestBodyTimeout,
		MaxWatchEventBytes:              proxy.DefaultMaxWatchEventBytes,
	}, proxy.Limits(o.ProxyLimits))
	assert.Equal(t, int64(3<<20), o.ProxyLimits.MaxRequestBodyBytes, "kube-apiserver's default")
	assert.Regexp(t, `(?m)^ +--proxy-max-request-body-bytes quantity .*\(env KARMADAFLOW_PROXY_MAX_REQUEST_BODY_BYTES\) \(default 3Mi\)$`, Usage(Worker))
}

func TestProxyLimitsFlags(t *testing.T) {
	o, err := Parse(Worker, []string{"--enable-proxy", "--proxy-self-signed-certificate", "--proxy-max-request-body-bytes=1048576", "--proxy-max-response-body-bytes=64Mi",
		"--proxy-max-buffered-bytes=1Gi", "--proxy-max-requests-inflight=10", "--proxy-max-long-running-requests-per-caller=5",
		"--proxy-max-requests-per-caller=7", "--proxy-max-buffered-bytes-per-caller=128Mi", "--proxy-request-body-timeout=5s",
		"--proxy-max-watch-event-bytes=4Mi"},
		env(map[string]string{"KARMADAFLOW_PROXY_MAX_LONG_RUNNING_REQUESTS_INFLIGHT": "20"}))
	require.NoError(t, err)
	assert.Equal(t, ProxyLimits{MaxRequestBodyBytes: 1 << 20, MaxResponseBodyBytes: 64 << 20, MaxBufferedBytes: 1 << 30,
		MaxRequestsInFlight: 10, MaxLongRunningRequestsInFlight: 20, MaxLongRunningRequestsPerCaller: 5,
		MaxRequestsPerCaller: 7, MaxBufferedBytesPerCaller: 128 << 20, RequestBodyTimeout: 5 * time.Second, MaxWatchEventBytes: 4 << 20}, o.ProxyLimits)

	_, err = Parse(Starter, []string{"--proxy-max-requests-inflight=10", "--proxy-max-long-running-requests-per-caller=5"}, env(nil))
	assert.Error(t, err, "a worker flag accepted by the starter")
}

func TestProxyLimitsValidation(t *testing.T) {
	for name, args := range map[string][]string{
		"zero body":                    {"--proxy-max-request-body-bytes=0"},
		"negative answer":              {"--proxy-max-response-body-bytes=-1"},
		"zero buffered":                {"--proxy-max-buffered-bytes=0"},
		"zero in flight":               {"--proxy-max-requests-inflight=0"},
		"zero long-running":            {"--proxy-max-long-running-requests-inflight=0"},
		"zero long-running per caller": {"--proxy-max-long-running-requests-per-caller=0"},
		"zero per caller":              {"--proxy-max-requests-per-caller=0"},
		"zero buffered per caller":     {"--proxy-max-buffered-bytes-per-caller=0"},
		"zero body timeout":            {"--proxy-request-body-timeout=0s"},
		"zero watch event":             {"--proxy-max-watch-event-bytes=0"},
		"answer beyond what is held":   {"--proxy-max-response-body-bytes=200Mi", "--proxy-max-buffered-bytes=100Mi"},
		"not a number of bytes":        {"--proxy-max-request-body-bytes=lots"},
		"not a whole number of bytes":  {"--proxy-max-request-body-bytes=0.5"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(Worker, append([]string{"--enable-proxy", "--proxy-self-signed-certificate"}, args...), env(nil))
			assert.Error(t, err)
		})
	}
}
