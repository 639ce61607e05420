package provisioning

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The install steps, each an activity of the same name, in the order they run.
const (
	StepEnsureNamespace              = "EnsureNamespace"
	StepGenerateCertificates         = "GenerateCertificates"
	StepInstallEtcd                  = "InstallEtcd"
	StepWaitEtcdReady                = "WaitEtcdReady"
	StepInstallAPIServer             = "InstallAPIServer"
	StepWaitLoadBalancer             = "WaitLoadBalancer"
	StepCertifyLoadBalancer          = "CertifyLoadBalancer"
	StepWaitAPIServerReady           = "WaitAPIServerReady"
	StepWriteAdminKubeconfig         = "WriteAdminKubeconfig"
	StepInstallAggregatedAPIServer   = "InstallAggregatedAPIServer"
	StepWaitAggregatedAPIServerReady = "WaitAggregatedAPIServerReady"
	StepInitControlPlane             = "InitControlPlane"
	StepInstallComponents            = "InstallComponents"
	StepWaitComponentsReady          = "WaitComponentsReady"
	// Components rolled one at a time: per component, StepInstallComponent then
	// StepWaitComponentReady (ComponentStep names the step of one), then the components the
	// spec no longer names removed.
	StepInstallComponent    = "InstallComponent"
	StepWaitComponentReady  = "WaitComponentReady"
	StepRemoveOldComponents = "RemoveOldComponents"
)

// ComponentStep is the name under which step is recorded for one component.
func ComponentStep(step, component string) string { return step + "/" + component }

// certificateSet names the set of certificates GenerateCertificates issues. It changes when the
// set does (the serving certificates of karmada-search and karmada-metrics-adapter joined it),
// so that instances installed before issue what they lack, and roll the pods that mount them.
const certificateSet = "extension-servers"

// StepHashes returns, per step, a hash of the parts of the spec the step's result depends on,
// including the hashes of the steps whose output it uses: a step whose hash is unchanged since
// it last succeeded need not run again. Waits share the hash of what they wait for.
func StepHashes(k *operatorv1alpha1.Karmada) map[string]string {
	s := k.Spec
	comps := s.Components
	if comps == nil {
		comps = &operatorv1alpha1.KarmadaComponents{}
	}
	api := apiServerSpec(k)
	h := map[string]string{}
	h[StepGenerateCertificates] = hashOf(certificateSet, s.HostCluster, s.CustomCertificate, api.CertSANs, ServiceType(k), DNSDomain(k),
		comps.Etcd, certSANsOf(comps.KarmadaAggregatedAPIServer))
	h[StepEnsureNamespace] = hashOf(k.Namespace, s.HostCluster)
	h[StepInstallEtcd] = hashOf(comps.Etcd, s.PrivateRegistry, h[StepGenerateCertificates])
	h[StepInstallAPIServer] = hashOf(api, comps.Etcd, s.PrivateRegistry, s.HostCluster, h[StepGenerateCertificates])
	h[StepWriteAdminKubeconfig] = hashOf(ServiceType(k), DNSDomain(k), s.HostCluster, h[StepInstallAPIServer])
	h[StepInstallAggregatedAPIServer] = hashOf(comps.KarmadaAggregatedAPIServer, comps.Etcd, s.FeatureGates, s.PrivateRegistry, h[StepWriteAdminKubeconfig])
	// Without a tarball in the spec, the CRDs are those of the Karmada version: a new version
	// applies its CRDs before the controllers roll.
	crdVersion := ""
	if s.CRDTarball == nil {
		crdVersion, _ = Versions(k)
	}
	h[StepInitControlPlane] = hashOf(s.CRDTarball, crdVersion, Installed(k, Search), Installed(k, MetricsAdapter), h[StepWriteAdminKubeconfig])
	h[StepInstallComponents] = hashOf(comps.KubeControllerManager, comps.KarmadaControllerManager, comps.KarmadaScheduler,
		comps.KarmadaWebhook, comps.KarmadaDescheduler, comps.KarmadaSearch, comps.KarmadaMetricsAdapter,
		s.FeatureGates, s.PrivateRegistry, api.ServiceSubnet, h[StepWriteAdminKubeconfig])

	var installed []string
	for _, c := range InstalledComponents(k) {
		gates := map[string]bool(nil)
		if c.KarmadaGates {
			gates = s.FeatureGates
		}
		var etcd any
		if c.Field == Search.Field {
			etcd = comps.Etcd // karmada-search stores in the instance's etcd
		}
		install := ComponentStep(StepInstallComponent, c.Name)
		h[install] = hashOf(fieldOf(comps, c.Field), gates, etcd, s.PrivateRegistry, api.ServiceSubnet, h[StepWriteAdminKubeconfig])
		h[ComponentStep(StepWaitComponentReady, c.Name)] = h[install]
		installed = append(installed, c.Name)
	}
	h[StepRemoveOldComponents] = hashOf(installed)

	h[StepWaitEtcdReady] = h[StepInstallEtcd]
	h[StepWaitLoadBalancer] = h[StepInstallAPIServer]
	h[StepCertifyLoadBalancer] = h[StepInstallAPIServer]
	h[StepWaitAPIServerReady] = h[StepInstallAPIServer]
	h[StepWaitAggregatedAPIServerReady] = h[StepInstallAggregatedAPIServer]
	h[StepWaitComponentsReady] = h[StepInstallComponents]
	return h
}

// fieldOf is the JSON of field under spec.components (null when unset).
func fieldOf(comps *operatorv1alpha1.KarmadaComponents, field string) json.RawMessage {
	var fields map[string]json.RawMessage
	data, err := json.Marshal(comps)
	if err == nil {
		err = json.Unmarshal(data, &fields)
	}
	if err != nil {
		panic("provisioning: reading spec.components: " + err.Error()) // plain API types always marshal
	}
	return fields[field]
}

func certSANsOf(a *operatorv1alpha1.KarmadaAggregatedAPIServer) []string {
	if a == nil {
		return nil
	}
	return a.CertSANs
}

// hashOf is a short hash of the JSON of parts (JSON sorts map keys, so it is stable).
func hashOf(parts ...any) string {
	data, err := json.Marshal(parts)
	if err != nil {
		panic("provisioning: hashing spec parts: " + err.Error()) // plain API types always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
