// Package certexpiry serves karmadaflow_certificate_expiry_timestamp_seconds: when each
// certificate of each provisioned Karmada expires, as the provisioning workflow reports it in
// the Karmada's status.certificates. It reads the starter's informer store at scrape time and
// never a Secret.
package certexpiry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// MetricName is the name of the gauge.
const MetricName = "karmadaflow_certificate_expiry_timestamp_seconds"

var desc = prometheus.NewDesc(MetricName,
	"When a certificate of a Karmada instance expires (its notAfter, Unix seconds), as its status.certificates.items report it.",
	[]string{"namespace", "karmada", "certificate"}, nil)

// collector makes one series of each item of each Karmada's status.certificates.items; an
// object without them has none.
type collector struct {
	karmadas cache.Store // of *unstructured.Unstructured Karmadas
}

// Register registers the gauge of the Karmadas in store, read at every scrape.
func Register(registerer prometheus.Registerer, karmadas cache.Store) error {
	return registerer.Register(collector{karmadas: karmadas})
}

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- desc }

// Collect skips an item without a name or a notAfter in RFC 3339 (which the CRD's schema
// refuses): one bad item must not fail the whole scrape. The names of one object's items are
// unique (a list map keyed by name), so no series is made twice.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, obj := range c.karmadas.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		items, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "certificates", "items")
		list, _ := items.([]any)
		for _, item := range list {
			fields, _ := item.(map[string]any)
			name, _ := fields["name"].(string)
			notAfter, _ := fields["notAfter"].(string)
			expiry, err := time.Parse(time.RFC3339, notAfter)
			if name == "" || err != nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(expiry.Unix()), u.GetNamespace(), u.GetName(), name)
		}
	}
}
