package provisioning

import (
	"path"
	"strings"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// Default versions of what is installed.
const (
	DefaultKarmadaVersion    = "v1.14.0"
	DefaultKubernetesVersion = "v1.31.3"
	defaultEtcdTag           = "3.5.16-0"
)

// Component is one workload of a control plane.
type Component struct {
	Name   string // app.kubernetes.io/name and container name
	Suffix string // object name suffix
	Field  string // JSON name under spec.components
	Image  string // default image repository
	Tag    string // default image tag
	// Optional components are installed only when their field is set.
	Optional bool
	// KarmadaGates components take spec.featureGates: the Karmada components that have a
	// --feature-gates flag (karmada-descheduler, karmada-search and karmada-metrics-adapter
	// have none and would refuse to start with it).
	KarmadaGates bool
}

// The workloads, in install order.
var (
	Etcd                  = Component{Name: "etcd", Suffix: SuffixEtcd, Field: "etcd", Image: "registry.k8s.io/etcd", Tag: defaultEtcdTag}
	APIServer             = Component{Name: "karmada-apiserver", Suffix: SuffixAPIServer, Field: "karmadaAPIServer", Image: "registry.k8s.io/kube-apiserver", Tag: DefaultKubernetesVersion}
	AggregatedAPIServer   = Component{Name: "karmada-aggregated-apiserver", Suffix: SuffixAggregatedAPIServer, Field: "karmadaAggregatedAPIServer", Image: "docker.io/karmada/karmada-aggregated-apiserver", Tag: DefaultKarmadaVersion, KarmadaGates: true}
	KubeControllerManager = Component{Name: "kube-controller-manager", Suffix: SuffixKubeControllerManager, Field: "kubeControllerManager", Image: "registry.k8s.io/kube-controller-manager", Tag: DefaultKubernetesVersion}
	ControllerManager     = Component{Name: "karmada-controller-manager", Suffix: SuffixControllerManager, Field: "karmadaControllerManager", Image: "docker.io/karmada/karmada-controller-manager", Tag: DefaultKarmadaVersion, KarmadaGates: true}
	Scheduler             = Component{Name: "karmada-scheduler", Suffix: SuffixScheduler, Field: "karmadaScheduler", Image: "docker.io/karmada/karmada-scheduler", Tag: DefaultKarmadaVersion, KarmadaGates: true}
	Webhook               = Component{Name: "karmada-webhook", Suffix: SuffixWebhook, Field: "karmadaWebhook", Image: "docker.io/karmada/karmada-webhook", Tag: DefaultKarmadaVersion, KarmadaGates: true}
	Descheduler           = Component{Name: "karmada-descheduler", Suffix: SuffixDescheduler, Field: "karmadaDescheduler", Image: "docker.io/karmada/karmada-descheduler", Tag: DefaultKarmadaVersion, Optional: true}
	Search                = Component{Name: "karmada-search", Suffix: SuffixSearch, Field: "karmadaSearch", Image: "docker.io/karmada/karmada-search", Tag: DefaultKarmadaVersion, Optional: true}
	MetricsAdapter        = Component{Name: "karmada-metrics-adapter", Suffix: SuffixMetricsAdapter, Field: "karmadaMetricsAdapter", Image: "docker.io/karmada/karmada-metrics-adapter", Tag: DefaultKarmadaVersion, Optional: true}
)

// Components are the workloads InstallComponents installs (after the API servers).
var Components = []Component{KubeControllerManager, ControllerManager, Scheduler, Webhook, Descheduler, Search, MetricsAdapter}

// Settings are the settings of one component as the spec gives them (zero when unset).
type Settings struct {
	Set          bool
	Common       operatorv1alpha1.CommonSettings
	ExtraArgs    map[string]string
	FeatureGates map[string]bool
	Controllers  []string
}

// SettingsOf returns the settings of c in k's spec.
func SettingsOf(k *operatorv1alpha1.Karmada, c Component) Settings {
	comps := k.Spec.Components
	if comps == nil {
		comps = &operatorv1alpha1.KarmadaComponents{}
	}
	switch c.Field {
	case Etcd.Field:
		if comps.Etcd != nil && comps.Etcd.Local != nil {
			return Settings{Set: true, Common: comps.Etcd.Local.CommonSettings}
		}
	case APIServer.Field:
		if s := comps.KarmadaAPIServer; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs, FeatureGates: s.FeatureGates}
		}
	case AggregatedAPIServer.Field:
		if s := comps.KarmadaAggregatedAPIServer; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs, FeatureGates: s.FeatureGates}
		}
	case KubeControllerManager.Field:
		if s := comps.KubeControllerManager; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs, FeatureGates: s.FeatureGates, Controllers: s.Controllers}
		}
	case ControllerManager.Field:
		if s := comps.KarmadaControllerManager; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs, FeatureGates: s.FeatureGates, Controllers: s.Controllers}
		}
	case Scheduler.Field:
		if s := comps.KarmadaScheduler; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs, FeatureGates: s.FeatureGates}
		}
	case Webhook.Field:
		if s := comps.KarmadaWebhook; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs}
		}
	case Descheduler.Field:
		if s := comps.KarmadaDescheduler; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs}
		}
	case Search.Field:
		if s := comps.KarmadaSearch; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs}
		}
	case MetricsAdapter.Field:
		if s := comps.KarmadaMetricsAdapter; s != nil {
			return Settings{Set: true, Common: s.CommonSettings, ExtraArgs: s.ExtraArgs}
		}
	}
	return Settings{}
}

// Installed reports whether c is part of k's control plane.
func Installed(k *operatorv1alpha1.Karmada, c Component) bool {
	if c.Field == Etcd.Field {
		return !externalEtcd(k)
	}
	return !c.Optional || SettingsOf(k, c).Set
}

// InstalledComponents are the Components k installs, in order.
func InstalledComponents(k *operatorv1alpha1.Karmada) []Component {
	var out []Component
	for _, c := range Components {
		if Installed(k, c) {
			out = append(out, c)
		}
	}
	return out
}

// Image is the image of c: the spec's repository and tag or the defaults, moved to the
// private registry when one is set.
func Image(k *operatorv1alpha1.Karmada, c Component) string {
	s := SettingsOf(k, c).Common
	repo, tag := c.Image, c.Tag
	if s.ImageRepository != "" {
		repo = s.ImageRepository
	}
	if s.ImageTag != "" {
		tag = s.ImageTag
	}
	if r := k.Spec.PrivateRegistry; r != nil && r.Registry != "" {
		repo = strings.TrimSuffix(r.Registry, "/") + "/" + path.Base(repo)
	}
	return repo + ":" + tag
}

// Versions are the Karmada and Kubernetes versions k installs (the image tags).
func Versions(k *operatorv1alpha1.Karmada) (karmada, kubernetes string) {
	return imageTag(Image(k, ControllerManager)), imageTag(Image(k, APIServer))
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

func externalEtcd(k *operatorv1alpha1.Karmada) bool {
	c := k.Spec.Components
	return c != nil && c.Etcd != nil && c.Etcd.External != nil
}

func apiServerSpec(k *operatorv1alpha1.Karmada) operatorv1alpha1.KarmadaAPIServer {
	if c := k.Spec.Components; c != nil && c.KarmadaAPIServer != nil {
		return *c.KarmadaAPIServer
	}
	return operatorv1alpha1.KarmadaAPIServer{}
}
