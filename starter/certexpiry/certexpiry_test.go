package certexpiry

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// karmada is a Karmada as the informer's store holds it, with status.certificates.items as
// given (none when nil).
func karmada(namespace, name string, items ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada",
		"metadata": map[string]any{"namespace": namespace, "name": name},
	}}
	if items != nil {
		list := make([]any, len(items))
		for i, item := range items {
			list[i] = item
		}
		u.Object["status"] = map[string]any{"certificates": map[string]any{
			"notAfter": "2026-01-01T00:00:00Z", "renewalTime": "2025-09-01T00:00:00Z", "items": list,
		}}
	}
	return u
}

func item(name, notAfter string) map[string]any {
	return map[string]any{"name": name, "notAfter": notAfter}
}

const header = `# HELP karmadaflow_certificate_expiry_timestamp_seconds When a certificate of a Karmada instance expires (its notAfter, Unix seconds), as its status.certificates.items report it.
# TYPE karmadaflow_certificate_expiry_timestamp_seconds gauge
`

func TestCollectorServesEachCertificateOfTheStore(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	registry := prometheus.NewPedanticRegistry()
	require.NoError(t, Register(registry, store))
	gathered := func(t *testing.T, series string) {
		t.Helper()
		require.NoError(t, testutil.GatherAndCompare(registry, strings.NewReader(header+series), MetricName))
	}

	// 2026-01-01T00:00:00Z is 1767225600; 2026-03-01T12:30:00Z is 1772368200.
	require.NoError(t, store.Add(karmada("tenant1", "demo",
		item("karmada-cert/apiserver.crt", "2026-01-01T00:00:00Z"),
		item("karmada-scheduler-config/kubeconfig", "2026-03-01T12:30:00Z"))))
	require.NoError(t, store.Add(karmada("tenant2", "demo", item("karmada-cert/apiserver.crt", "2026-03-01T12:30:00+00:00"))))
	require.NoError(t, store.Add(karmada("tenant1", "new")))                          // not provisioned yet: no status.certificates
	require.NoError(t, store.Add(karmada("tenant1", "empty", []map[string]any{}...))) // no items
	require.NoError(t, store.Add(karmada("tenant1", "odd",
		item("", "2026-01-01T00:00:00Z"), item("karmada-cert/etcd.crt", "soon"), map[string]any{"name": "karmada-cert/ca.crt"},
		item("karmada-cert/front-proxy-client.crt", "2026-01-01T01:00:00.5+01:00"))))
	gathered(t, `karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-cert/apiserver.crt",karmada="demo",namespace="tenant1"} 1.7672256e+09
karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-scheduler-config/kubeconfig",karmada="demo",namespace="tenant1"} 1.7723682e+09
karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-cert/apiserver.crt",karmada="demo",namespace="tenant2"} 1.7723682e+09
karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-cert/front-proxy-client.crt",karmada="odd",namespace="tenant1"} 1.7672256e+09
`)

	// A renewal and a deletion show at the next scrape.
	require.NoError(t, store.Update(karmada("tenant1", "demo",
		item("karmada-cert/apiserver.crt", "2026-03-01T12:30:00Z"),
		item("karmada-scheduler-config/kubeconfig", "2026-03-01T12:30:00Z"))))
	require.NoError(t, store.Delete(karmada("tenant2", "demo")))
	require.NoError(t, store.Delete(karmada("tenant1", "odd")))
	gathered(t, `karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-cert/apiserver.crt",karmada="demo",namespace="tenant1"} 1.7723682e+09
karmadaflow_certificate_expiry_timestamp_seconds{certificate="karmada-scheduler-config/kubeconfig",karmada="demo",namespace="tenant1"} 1.7723682e+09
`)

	// An empty store serves no series.
	require.NoError(t, store.Replace(nil, ""))
	require.Equal(t, 0, testutil.CollectAndCount(collector{karmadas: store}, MetricName))
}

// Objects that are not Karmadas as the informer decodes them (a tombstone, a typed object) are
// skipped.
func TestCollectorSkipsWhatIsNotUnstructured(t *testing.T) {
	store := cache.NewStore(func(obj any) (string, error) { return "x", nil })
	require.NoError(t, store.Add(cache.DeletedFinalStateUnknown{Key: "tenant1/demo", Obj: karmada("tenant1", "demo", item("a", "2026-01-01T00:00:00Z"))}))
	require.Equal(t, 0, testutil.CollectAndCount(collector{karmadas: store}, MetricName))
}
