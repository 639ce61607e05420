package provisioning

import (
	"strings"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Suffixes of the objects of an instance (see Names).
const (
	SuffixAPIServer             = "apiserver"
	SuffixAggregatedAPIServer   = "aggregated-apiserver"
	SuffixEtcd                  = "etcd"
	SuffixEtcdClient            = "etcd-client"
	SuffixCert                  = "cert"
	SuffixEtcdCert              = "etcd-cert"
	SuffixWebhookCert           = "webhook-cert"
	SuffixAdminConfig           = "admin-config"
	SuffixKubeControllerManager = "kube-controller-manager"
	SuffixControllerManager     = "controller-manager"
	SuffixScheduler             = "scheduler"
	SuffixWebhook               = "webhook"
	SuffixDescheduler           = "descheduler"
	SuffixMetricsAdapter        = "metrics-adapter"
	SuffixSearch                = "search"
)

// Labels on everything an instance creates in the host cluster.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	// ManagedBy is the value of LabelManagedBy: objects without it are never deleted.
	ManagedBy = naming.FieldManager
)

// APIServerPort is the port the API server listens on and its Service's port.
const (
	APIServerPort     = 5443
	APIServerPortName = "client"
)

// Names are the deterministic names of one instance's objects.
type Names struct{ prefix string }

// NamesFor returns the names of the instance called cr: "<cr>-<suffix>" when cr contains
// "karmada", otherwise "<cr>-karmada-<suffix>".
func NamesFor(cr string) Names {
	if strings.Contains(cr, "karmada") {
		return Names{prefix: cr}
	}
	return Names{prefix: cr + "-karmada"}
}

// Of is the name of the object with suffix.
func (n Names) Of(suffix string) string { return n.prefix + "-" + suffix }

// objectNames are the names of every object of the instance that carries its prefix: one per
// suffix, and the kubeconfig Secret of each component.
func (n Names) objectNames() []string {
	suffixes := []string{SuffixAPIServer, SuffixAggregatedAPIServer, SuffixEtcd, SuffixEtcdClient, SuffixCert, SuffixEtcdCert,
		SuffixWebhookCert, SuffixAdminConfig, SuffixKubeControllerManager, SuffixControllerManager, SuffixScheduler,
		SuffixWebhook, SuffixDescheduler, SuffixMetricsAdapter, SuffixSearch}
	names := make([]string, 0, len(suffixes)+3+len(Components))
	for _, s := range suffixes {
		names = append(names, n.Of(s))
	}
	for _, c := range append([]Component{Etcd, APIServer, AggregatedAPIServer}, Components...) {
		names = append(names, n.ComponentConfig(c.Name))
	}
	return names
}

// ComponentConfig is the name of the kubeconfig Secret of a component.
func (n Names) ComponentConfig(component string) string {
	return n.prefix + "-" + component + "-config"
}

// Labels are the labels of an object of component ("app.kubernetes.io/name") of instance cr.
func Labels(cr, component string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: component, LabelInstance: cr}
}

// InstanceSelector selects every object of instance cr that karmadaflow created.
func InstanceSelector(cr string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelInstance + "=" + cr
}
