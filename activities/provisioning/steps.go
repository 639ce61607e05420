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
)

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
	h[StepInitControlPlane] = hashOf(s.CRDTarball, Installed(k, Search), Installed(k, MetricsAdapter), h[StepWriteAdminKubeconfig])
	h[StepInstallComponents] = hashOf(comps.KubeControllerManager, comps.KarmadaControllerManager, comps.KarmadaScheduler,
		comps.KarmadaWebhook, comps.KarmadaDescheduler, comps.KarmadaSearch, comps.KarmadaMetricsAdapter,
		s.FeatureGates, s.PrivateRegistry, api.ServiceSubnet, h[StepWriteAdminKubeconfig])

	h[StepWaitEtcdReady] = h[StepInstallEtcd]
	h[StepWaitLoadBalancer] = h[StepInstallAPIServer]
	h[StepCertifyLoadBalancer] = h[StepInstallAPIServer]
	h[StepWaitAPIServerReady] = h[StepInstallAPIServer]
	h[StepWaitAggregatedAPIServerReady] = h[StepInstallAggregatedAPIServer]
	h[StepWaitComponentsReady] = h[StepInstallComponents]
	return h
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
