package options

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/karmadaflow/karmadaflow/internal/urlprefix"
)

// FuzzParse parses (and so validates, Validate and the checks it calls) any command line (one
// argument a line) and one environment variable: never a panic, the same options or error
// each time, and options accepted hold what the components rely on.
func FuzzParse(f *testing.F) {
	f.Add(true, "", "", "")
	f.Add(true, "--enable-proxy\n--proxy-self-signed-certificate\n--proxy-max-request-body-bytes=3Mi\n--proxy-max-response-body-bytes=64Mi\n--proxy-max-buffered-bytes=1Gi", "", "")
	f.Add(true, "--enable-proxy\n--proxy-max-requests-inflight=0\n--proxy-auth-qps=-1\n--proxy-bind-address=:10443", "KARMADAFLOW_PROXY_MAX_BUFFERED_BYTES", "1e3")
	f.Add(true, "--crd-tarball-url=https://mirror.example.com/{{.Version}}/crds.tar.gz\n--crd-tarball-token-secret=ns/name\n--enable-provisioning\n--provisioning-selector=tier in (a,b)", "", "")
	f.Add(true, "--crd-tarball-url=ftp://x\n--crd-tarball-token-secret=a/b/c\n--provisioning-selector=!!", "", "")
	f.Add(true, "--crd-tarball-allowed-url-prefixes=https://github.com/karmada-io/,http://[::1]:80/a\n--crd-tarball-allowed-proxy-urls=http://proxy:3128", "KARMADAFLOW_CRD_TARBALL_ALLOWED_PROXY_URLS", "http://p/x")
	f.Add(true, "--kube-api-qps=NaN\n--activities-per-second=NaN\n--enable-proxy\n--proxy-auth-qps=NaN", "", "")
	f.Add(false, "--leader-elect\n--leader-elect-retry-period=2s\n--leader-elect-renew-deadline=2s\n--leader-elect-lease-duration=1s", "KARMADAFLOW_TEMPORAL_ADDRESS", "temporal:7233")
	f.Add(false, "--temporal-address=nohost\n--metrics-bind-address=:\n--log-level=loud\n--log-format=xml\n--shutdown-timeout=-1s", "KARMADAFLOW_KUBE_API_QPS", "NaN")
	f.Add(true, "--serve-search-api\n--search-etcd-servers=http://e:2379\n--max-concurrent-workflow-tasks=1\n--cluster-probe-interval=1ms", "", "")
	f.Add(true, "--version", "", "")
	f.Add(true, "extra", "", "")
	f.Add(true, "-temporal-address=temporal:7233\n--help", "", "")
	f.Add(false, "--task-queue\nq\n--leader-elect=false\n-h", "KARMADAFLOW_LEADER_ELECT", "true")
	f.Fuzz(func(t *testing.T, worker bool, args, envName, envValue string) {
		component := Starter
		if worker {
			component = Worker
		}
		var argv []string
		if args != "" {
			argv = strings.Split(args, "\n")
		}
		getenv := func(name string) string {
			if name == envName {
				return envValue
			}
			return ""
		}
		o, err := Parse(component, argv, getenv)
		again, errAgain := Parse(component, argv, getenv)
		if (err == nil) != (errAgain == nil) || (err != nil && err.Error() != errAgain.Error()) {
			t.Fatalf("Parse differs: %v, then %v", err, errAgain)
		}
		if err != nil {
			if o != nil {
				t.Fatalf("an error (%v) and options", err)
			}
			return
		}
		if !reflect.DeepEqual(o, again) {
			t.Fatalf("Parse differs:\n%+v\n%+v", o, again)
		}
		if o.Component != component {
			t.Fatalf("component %q parsed as %q", component, o.Component)
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("accepted options fail Validate: %v", err)
		}
		if o.CRDTarballURL != "" {
			u, err := url.Parse(strings.ReplaceAll(o.CRDTarballURL, "{{.Version}}", "v1.19.0"))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("--crd-tarball-url %q accepted (%v)", o.CRDTarballURL, err)
			}
		}
		if _, err := urlprefix.ParseList(o.CRDTarballAllowedURLPrefixes); err != nil {
			t.Fatalf("--crd-tarball-allowed-url-prefixes %q accepted: %v", o.CRDTarballAllowedURLPrefixes, err)
		}
		if l, err := urlprefix.ParseList(o.CRDTarballAllowedProxyURLs); err != nil || slices.ContainsFunc(l, urlprefix.Prefix.HasPath) {
			t.Fatalf("--crd-tarball-allowed-proxy-urls %q accepted (%v)", o.CRDTarballAllowedProxyURLs, err)
		}
		if o.ProvisioningSelector != "" {
			if _, err := labels.Parse(o.ProvisioningSelector); err != nil {
				t.Fatalf("--provisioning-selector %q accepted: %v", o.ProvisioningSelector, err)
			}
		}
		if l := o.ProxyLimits; o.EnableProxy {
			if l.MaxRequestBodyBytes <= 0 || l.MaxResponseBodyBytes <= 0 || l.MaxBufferedBytes <= 0 || l.MaxResponseBodyBytes > l.MaxBufferedBytes ||
				l.MaxRequestsInFlight <= 0 || l.MaxLongRunningRequestsInFlight <= 0 || l.MaxLongRunningRequestsPerCaller <= 0 {
				t.Fatalf("proxy limits accepted: %+v", l)
			}
		}
		if !(o.KubeAPIQPS > 0) || o.KubeAPIBurst <= 0 || o.ShutdownTimeout <= 0 || o.MaxConcurrentWorkflowTasks < 2 {
			t.Fatalf("accepted qps %v, burst %d, shutdown timeout %v, workflow tasks %d", o.KubeAPIQPS, o.KubeAPIBurst, o.ShutdownTimeout, o.MaxConcurrentWorkflowTasks)
		}
	})
}

// TestNotANumberIsRefused: NaN is neither positive nor negative, so a check written as "<= 0"
// let it through (found by FuzzParse).
func TestNotANumberIsRefused(t *testing.T) {
	for _, flag := range []string{"--kube-api-qps=NaN", "--activities-per-second=NaN"} {
		_, err := Parse(Worker, []string{flag}, noEnv)
		assert.Error(t, err, flag)
	}
	_, err := Parse(Worker, []string{"--enable-proxy", "--proxy-auth-qps=NaN"}, noEnv)
	assert.Error(t, err)
}

// TestCRDTarballURLErrorHidesItsSecrets: the flag's error shows the URL without its password
// and query.
func TestCRDTarballURLErrorHidesItsSecrets(t *testing.T) {
	_, err := Parse(Worker, []string{"--crd-tarball-url=ftp://user:s3cret@mirror/crds.tar.gz?sig=t0ken"}, noEnv)
	if assert.Error(t, err) {
		assert.NotContains(t, err.Error(), "s3cret")
		assert.NotContains(t, err.Error(), "t0ken")
	}
}

func noEnv(string) string { return "" }
