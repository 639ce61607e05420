package podrunner_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/internal/pki"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/env/podrunner"
)

const tlsNamespace = "tls-play"

// testSecretVolume runs an etcd serving TLS with a certificate from a Secret volume (items
// renamed) behind a NodePort, ready by an HTTPS probe; a re-issued certificate reaches the
// pod's files; an ExternalName Service resolves to the Service it names; and a pod whose
// image has no binary waits with ErrImagePull.
func testSecretVolume(t *testing.T, e *env.Env) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	client := e.Host.Client()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tlsNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)

	ca, err := pki.NewAuthority("tls-play-ca")
	require.NoError(t, err)
	serverName := "tls-etcd." + tlsNamespace + ".svc"
	issue := func() pki.KeyPair {
		pair, err := ca.Issue(pki.LeafSpec{CommonName: "tls-etcd", DNSNames: []string{serverName}, Server: true}, time.Hour)
		require.NoError(t, err)
		return pair
	}
	serving := issue()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls-etcd-certs"}, Data: map[string][]byte{"tls.crt": serving.Cert, "tls.key": serving.Key}}
	_, err = client.CoreV1().Secrets(tlsNamespace).Create(ctx, secret, metav1.CreateOptions{})
	require.NoError(t, err)

	labels := map[string]string{"app": "tls-etcd", podrunner.LabelManagedBy: podrunner.ManagedBy}
	selector := map[string]string{"app": "tls-etcd"}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "tls-etcd"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: selector,
			Ports: []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tls-alias"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName,
			ExternalName: "tls-etcd." + tlsNamespace + ".svc.cluster.local"}},
	} {
		_, err := client.CoreV1().Services(tlsNamespace).Create(ctx, svc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	podIP := corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "tls-etcd", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name:  "etcd",
						Image: "registry.k8s.io/etcd:3.5.16-0",
						Args: []string{
							"--data-dir=/var/lib/etcd",
							"--listen-client-urls=https://$(POD_IP):2379",
							"--advertise-client-urls=https://$(POD_IP):2379",
							"--listen-peer-urls=http://$(POD_IP):2380",
							"--initial-advertise-peer-urls=http://$(POD_IP):2380",
							"--initial-cluster=default=http://$(POD_IP):2380",
							"--cert-file=/etc/etcd/pki/server.crt",
							"--key-file=/etc/etcd/pki/server.key",
						},
						Env: []corev1.EnvVar{podIP},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/health", Port: intstr.FromInt32(2379), Scheme: corev1.URISchemeHTTPS}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "certs", MountPath: "/etc/etcd/pki", ReadOnly: true},
							{Name: "data", MountPath: "/var/lib/etcd"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name,
							Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "server.crt"}, {Key: "tls.key", Path: "server.key"}}}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	_, err = client.AppsV1().Deployments(tlsNamespace).Create(ctx, deploy, metav1.CreateOptions{})
	require.NoError(t, err)
	missing := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "no-binary", Labels: map[string]string{podrunner.LabelManagedBy: podrunner.ManagedBy}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "docker.io/karmada/karmada-nothing:v1.0.0"}}},
	}
	_, err = client.CoreV1().Pods(tlsNamespace).Create(ctx, missing, metav1.CreateOptions{})
	require.NoError(t, err)

	begin := time.Now()
	waitFor(ctx, t, "the TLS Deployment available", func() (bool, error) {
		d, err := client.AppsV1().Deployments(tlsNamespace).Get(ctx, deploy.Name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1, err
	})
	t.Logf("TLS Deployment available in %.1fs", time.Since(begin).Seconds())

	// Through the NodePort, verified against the CA by the Service's name.
	svc, err := client.CoreV1().Services(tlsNamespace).Get(ctx, "tls-etcd", metav1.GetOptions{})
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Pair().Cert)
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName}}}
	endpoint := "https://" + net.JoinHostPort(e.Host.NodeIP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	var health struct {
		Health string `json:"health"`
	}
	require.NoError(t, call(ctx, httpClient, http.MethodGet, endpoint+"/health", &health))
	assert.Equal(t, "true", health.Health)

	pods, err := client.CoreV1().Pods(tlsNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=tls-etcd"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	podDir := filepath.Join(e.PodsDir(), tlsNamespace, pods.Items[0].Name)

	// The ExternalName Service has the addresses of the Service it names.
	hosts, err := os.ReadFile(filepath.Join(podDir, "etc-hosts"))
	require.NoError(t, err)
	assert.Equal(t, hostsAddress(string(hosts), "tls-etcd."+tlsNamespace+".svc"), hostsAddress(string(hosts), "tls-alias."+tlsNamespace+".svc"))
	assert.NotEmpty(t, hostsAddress(string(hosts), "tls-alias."+tlsNamespace+".svc"))

	// A re-issued certificate is written into the volume.
	reissued := issue()
	secret.Data["tls.crt"] = reissued.Cert
	_, err = client.CoreV1().Secrets(tlsNamespace).Update(ctx, secret, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(ctx, t, "the re-issued certificate in the volume", func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(podDir, "volumes", "certs", "server.crt"))
		return err == nil && bytes.Equal(data, reissued.Cert), nil
	})

	// No binary for the image: the container waits, saying why.
	waitFor(ctx, t, "ErrImagePull for the missing binary", func() (bool, error) {
		p, err := client.CoreV1().Pods(tlsNamespace).Get(ctx, missing.Name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, err
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImagePull" && strings.Contains(w.Message, "no binary") &&
			p.Status.Phase == corev1.PodPending, nil
	})
}

// hostsAddress is the first address a hosts file gives name.
func hostsAddress(hosts, name string) string {
	for _, line := range strings.Split(hosts, "\n") {
		fields := strings.Fields(line)
		for _, f := range fields[min(1, len(fields)):] {
			if f == name {
				return fields[0]
			}
		}
	}
	return ""
}
