package provisioning

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The local etcd's manifests: its StatefulSet, and its headless and client Services.

// EtcdObjects are the local etcd's StatefulSet and its headless and client Services.
func EtcdObjects(k *operatorv1alpha1.Karmada, certHash string) (*appsv1.StatefulSet, []*corev1.Service) {
	names := NamesFor(k.Name)
	name := names.Of(SuffixEtcd)
	n := replicas(k, Etcd)
	var members []string
	for i := range *n {
		members = append(members, fmt.Sprintf("%s-%d=https://%s-%d.%s.%s.svc.%s:%d", name, i, name, i, name, k.Namespace, DNSDomain(k), etcdPeerPort))
	}
	// The metrics URL serves /metrics and the health endpoints the probe reads in plain HTTP:
	// the client URLs demand a client certificate.
	args := flags(map[string]string{
		"name":                        "$(POD_NAME)",
		"data-dir":                    etcdDataDir,
		"listen-client-urls":          "https://" + onPodIP(etcdClientPort),
		"listen-peer-urls":            "https://" + onPodIP(etcdPeerPort),
		"listen-metrics-urls":         "http://" + onPodIP(etcdMetricsPort),
		"advertise-client-urls":       fmt.Sprintf("https://$(POD_NAME).%s.%s.svc.%s:%d", name, k.Namespace, DNSDomain(k), etcdClientPort),
		"initial-advertise-peer-urls": fmt.Sprintf("https://$(POD_NAME).%s.%s.svc.%s:%d", name, k.Namespace, DNSDomain(k), etcdPeerPort),
		"initial-cluster":             strings.Join(members, ","),
		"initial-cluster-state":       "new",
		"client-cert-auth":            "true",
		"trusted-ca-file":             etcdPKIDir + "/" + KeyEtcdCACert,
		"cert-file":                   etcdPKIDir + "/" + KeyEtcdServerCert,
		"key-file":                    etcdPKIDir + "/" + KeyEtcdServerKey,
		"peer-client-cert-auth":       "true",
		"peer-trusted-ca-file":        etcdPKIDir + "/" + KeyEtcdCACert,
		"peer-cert-file":              etcdPKIDir + "/" + KeyEtcdPeerCert,
		"peer-key-file":               etcdPKIDir + "/" + KeyEtcdPeerKey,
	}, nil)
	container := corev1.Container{
		Name:    Etcd.Name,
		Command: append([]string{"etcd"}, args...),
		Env:     []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: etcdClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "server", ContainerPort: etcdPeerPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: etcdMetricsPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts:   []corev1.VolumeMount{{Name: volumeEtcdData, MountPath: etcdDataDir}, {Name: volumeEtcdCerts, MountPath: etcdPKIDir, ReadOnly: true}},
		ReadinessProbe: readinessProbe("/readyz", etcdMetricsPort, corev1.URISchemeHTTP),
	}
	volumes := []corev1.Volume{secretVolume(volumeEtcdCerts, names.Of(SuffixEtcdCert))}
	var claims []corev1.PersistentVolumeClaim
	var data *operatorv1alpha1.VolumeData
	if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.Local != nil {
		data = c.Etcd.Local.VolumeData
	}
	switch {
	case data != nil && data.VolumeClaim != nil:
		claims = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: volumeEtcdData, Labels: data.VolumeClaim.Labels}, Spec: data.VolumeClaim.Spec}}
	case data != nil && data.HostPath != nil:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{HostPath: data.HostPath}})
	case data != nil && data.EmptyDir != nil:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{EmptyDir: data.EmptyDir}})
	default:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	meta := objectMeta(k, Etcd, name)
	s := SettingsOf(k, Etcd).Common
	meta.Labels, meta.Annotations = mergeLabels(s.Labels, meta.Labels), s.Annotations
	sts := &appsv1.StatefulSet{
		TypeMeta:   statefulType,
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             n,
			ServiceName:          name,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Selector:             &metav1.LabelSelector{MatchLabels: selector(k.Name, Etcd)},
			Template:             podTemplate(k, Etcd, container, volumes, certHash),
			VolumeClaimTemplates: claims,
		},
	}
	headless := service(k, Etcd, name, etcdClientPort, etcdClientPort, "client")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.PublishNotReadyAddresses = true
	headless.Spec.Ports = append(headless.Spec.Ports, corev1.ServicePort{Name: "server", Port: etcdPeerPort, TargetPort: intstr.FromInt32(etcdPeerPort), Protocol: corev1.ProtocolTCP})
	client := service(k, Etcd, names.Of(SuffixEtcdClient), etcdClientPort, etcdClientPort, "client")
	return sts, []*corev1.Service{headless, client}
}
