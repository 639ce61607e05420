package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestSmoke: the environment and the service are up and observable.
func TestSmoke(t *testing.T) {
	t.Run("a Deployment and Service on member1 yield an EndpointSlice with KWOK pod IPs", func(t *testing.T) {
		ns := testNamespace(t)
		m1 := testEnv.Members[0]
		deployApp(t, m1, ns, "smoke", 2)
		cidr := netip.MustParsePrefix(m1.PodCIDR)
		eventually(t, 60*time.Second, func() error {
			list, err := m1.Client().DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=smoke"})
			if err != nil {
				return err
			}
			var addrs []string
			for _, s := range list.Items {
				for _, ep := range s.Endpoints {
					addrs = append(addrs, ep.Addresses...)
				}
			}
			if len(addrs) != 2 {
				return fmt.Errorf("want 2 endpoint addresses, have %v", addrs)
			}
			for _, a := range addrs {
				if !cidr.Contains(netip.MustParseAddr(a)) {
					return fmt.Errorf("address %s outside member1's pod CIDR %s", a, cidr)
				}
			}
			return nil
		})
	})

	t.Run("the Temporal UI answers", func(t *testing.T) {
		code, _ := httpGet(t, testEnv.Temporal.UIURL)
		require.Equal(t, http.StatusOK, code)
	})

	for _, component := range append(svc.Workers(), "starter") {
		t.Run(component+" is ready and serves metrics", func(t *testing.T) {
			base := "http://" + svc.MetricsAddress(component)
			code, body := httpGet(t, base+"/readyz")
			require.Equal(t, http.StatusOK, code, body)
			code, _ = httpGet(t, base+"/healthz")
			require.Equal(t, http.StatusOK, code)
			code, body = httpGet(t, base+"/metrics")
			require.Equal(t, http.StatusOK, code)
			for _, family := range []string{"go_goroutines", "process_resident_memory_bytes", "temporal_request",
				`rest_client_requests_total{code="200",host="`, "rest_client_request_duration_seconds_bucket{"} {
				require.True(t, strings.Contains(body, family), "%s metrics lack %s", component, family)
			}
		})
	}
}
