package podrunner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/env/podrunner"
)

const (
	namespace = "etcd-play"
	etcdName  = "etcd"
	replicas  = 3
)

// TestPlayPods starts an environment with PlayPods and runs pods in its host cluster.
func TestPlayPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local environment")
	}
	begin := time.Now()
	e, err := env.Start(t.Context(), env.Options{Members: 1, PlayPods: true, Logf: t.Logf})
	if errors.Is(err, env.ErrToolsMissing) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, e.Stop()) })
	t.Logf("environment started in %.1fs", time.Since(begin).Seconds())

	t.Run("etcd StatefulSet", func(t *testing.T) { testEtcdStatefulSet(t, e) })
	t.Run("TLS from a Secret volume", func(t *testing.T) { testSecretVolume(t, e) })
	assert.Empty(t, e.OutsideConnections(), "connections outside 127.0.0.0/8")
}

// testEtcdStatefulSet runs a three-member etcd StatefulSet: the members find each other by
// their StatefulSet DNS names, form one cluster reachable through a NodePort, the
// StatefulSet counts them ready, a killed member restarts, and deleting the StatefulSet ends
// every process and removes the pods.
func testEtcdStatefulSet(t *testing.T, e *env.Env) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	client := e.Host.Client()
	createEtcd(ctx, t, client)

	begin := time.Now()
	waitFor(ctx, t, "3 ready replicas", func() (bool, error) {
		sts, err := client.AppsV1().StatefulSets(namespace).Get(ctx, etcdName, metav1.GetOptions{})
		return err == nil && sts.Status.ReadyReplicas == replicas, err
	})
	t.Logf("StatefulSet ready in %.1fs", time.Since(begin).Seconds())

	pods := etcdPods(ctx, t, client)
	for _, p := range pods {
		assert.Equal(t, corev1.PodRunning, p.Status.Phase, p.Name)
		assert.Equal(t, e.Host.NodeIP, p.Status.HostIP, p.Name)
		assert.True(t, strings.HasPrefix(p.Status.PodIP, "10.250."), "pod IP %s of %s is not of the node's pod CIDR", p.Status.PodIP, p.Name)
	}

	// A status is written only when it changes: with every probe passing, the pods stay as
	// they are.
	versions := map[string]string{}
	for _, p := range pods {
		versions[p.Name] = p.ResourceVersion
	}
	time.Sleep(3 * time.Second)
	for _, p := range etcdPods(ctx, t, client) {
		assert.Equal(t, versions[p.Name], p.ResourceVersion, "pod %s was written again", p.Name)
	}

	// Every pod's /etc/hosts names the members and the Services.
	hosts, err := os.ReadFile(filepath.Join(e.PodsDir(), namespace, pods[0].Name, "etc-hosts"))
	require.NoError(t, err)
	for i := range replicas {
		assert.Contains(t, string(hosts), fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", etcdName, i, etcdName, namespace))
	}
	assert.Contains(t, string(hosts), fmt.Sprintf("%s-client.%s.svc.cluster.local", etcdName, namespace))
	t.Logf("/etc/hosts of %s:\n%s", pods[0].Name, hosts)

	svc, err := client.CoreV1().Services(namespace).Get(ctx, etcdName+"-client", metav1.GetOptions{})
	require.NoError(t, err)
	endpoint := "http://" + net.JoinHostPort(e.Host.NodeIP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	assertOneCluster(ctx, t, endpoint)

	// A killed member is restarted, counted, and back in the cluster.
	victim := pods[1]
	pid := containerPID(t, victim)
	restarts := victim.Status.ContainerStatuses[0].RestartCount
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	begin = time.Now()
	waitFor(ctx, t, victim.Name+" restarted and ready", func() (bool, error) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == restarts+1 && cs.Ready && cs.LastTerminationState.Terminated != nil, nil
	})
	t.Logf("%s restarted and ready in %.1fs", victim.Name, time.Since(begin).Seconds())
	assertOneCluster(ctx, t, endpoint)

	// Deleting the StatefulSet ends every process and removes the pods.
	var pids []int
	for _, p := range etcdPods(ctx, t, client) {
		pids = append(pids, containerPID(t, p))
	}
	begin = time.Now()
	require.NoError(t, client.AppsV1().StatefulSets(namespace).Delete(ctx, etcdName,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	waitFor(ctx, t, "pods removed", func() (bool, error) {
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
	for _, pid := range pids {
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d still exists", pid)
	}
	t.Logf("StatefulSet deleted, pods removed in %.1fs", time.Since(begin).Seconds())
}

// createEtcd creates the namespace, the headless and the NodePort Service and the
// StatefulSet of a three-member plain-HTTP etcd.
func createEtcd(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": etcdName, podrunner.LabelManagedBy: podrunner.ManagedBy}
	selector := map[string]string{"app": etcdName}
	ports := []corev1.ServicePort{
		{Name: "client", Port: 2379, TargetPort: intstr.FromString("client")},
		{Name: "peer", Port: 2380, TargetPort: intstr.FromString("peer")},
	}
	services := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: etcdName, Labels: labels}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: selector, Ports: ports}},
		{ObjectMeta: metav1.ObjectMeta{Name: etcdName + "-client", Labels: labels}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: selector, Ports: ports[:1]}},
	}
	for _, svc := range services {
		_, err := client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	peerURL := func(member string) string {
		return fmt.Sprintf("http://%s.%s.%s.svc.cluster.local:2380", member, etcdName, namespace)
	}
	var initial []string
	for i := range replicas {
		member := fmt.Sprintf("%s-%d", etcdName, i)
		initial = append(initial, member+"="+peerURL(member))
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	container := corev1.Container{
		Name:  "etcd",
		Image: "registry.k8s.io/etcd:3.5.16-0",
		Command: []string{"/usr/local/bin/etcd",
			"--name=$(POD_NAME)",
			"--data-dir=/var/lib/etcd",
			"--listen-client-urls=http://$(POD_IP):2379",
			"--advertise-client-urls=http://$(POD_NAME)." + etcdName + ".$(POD_NAMESPACE).svc.cluster.local:2379",
			"--listen-peer-urls=http://$(POD_IP):2380",
			"--initial-advertise-peer-urls=" + peerURL("$(POD_NAME)"),
			"--initial-cluster=" + strings.Join(initial, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + namespace,
			"--unsafe-no-fsync",
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"), fieldEnv("POD_IP", "status.podIP"),
		},
		Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("client")}},
			PeriodSeconds: 1, FailureThreshold: 3,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: etcdName, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](replicas),
			ServiceName:         etcdName,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{container},
					Volumes:                       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
				},
			},
		},
	}
	_, err = client.AppsV1().StatefulSets(namespace).Create(ctx, sts, metav1.CreateOptions{})
	require.NoError(t, err)
}

func etcdPods(ctx context.Context, t *testing.T, client kubernetes.Interface) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + etcdName})
	require.NoError(t, err)
	require.Len(t, list.Items, replicas)
	return list.Items
}

// containerPID is the pid of the pod's running process, from its container ID.
func containerPID(t *testing.T, p corev1.Pod) int {
	t.Helper()
	require.Len(t, p.Status.ContainerStatuses, 1, p.Name)
	id, ok := strings.CutPrefix(p.Status.ContainerStatuses[0].ContainerID, "karmadaflow://")
	require.True(t, ok, "container ID %q of %s", p.Status.ContainerStatuses[0].ContainerID, p.Name)
	pid, err := strconv.Atoi(id)
	require.NoError(t, err)
	return pid
}

// assertOneCluster checks through the NodePort that etcd is healthy and has three members.
func assertOneCluster(ctx context.Context, t *testing.T, endpoint string) {
	t.Helper()
	httpClient := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var health struct {
		Health string `json:"health"`
	}
	var members struct {
		Members []struct {
			Name       string   `json:"name"`
			ClientURLs []string `json:"clientURLs"`
		} `json:"members"`
	}
	waitFor(ctx, t, "etcd healthy with 3 members at "+endpoint, func() (bool, error) {
		if err := call(ctx, httpClient, http.MethodGet, endpoint+"/health", &health); err != nil || health.Health != "true" {
			return false, nil
		}
		if err := call(ctx, httpClient, http.MethodPost, endpoint+"/v3/cluster/member/list", &members); err != nil {
			return false, nil
		}
		return len(members.Members) == replicas, nil
	})
	for _, m := range members.Members {
		assert.Len(t, m.ClientURLs, 1, m.Name)
	}
}

func call(ctx context.Context, client *http.Client, method, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

// waitFor polls cond every 250 ms until it holds, failing the test when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
		}
		return ok, nil
	})
	require.NoError(t, err, "waiting for %s (last error: %v)", what, last)
}
