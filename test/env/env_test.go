package env

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// startForTest starts an environment, skipping the test when the tools are not built, except
// on CI (CI=true), where a missing tool fails the test.
func startForTest(t *testing.T, opts Options) *Env {
	t.Helper()
	opts.Logf = t.Logf
	begin := time.Now()
	e, err := Start(t.Context(), opts)
	if errors.Is(err, ErrToolsMissing) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the environment cannot start: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	require.NoError(t, err)
	t.Logf("environment with %d members started in %.1fs", len(e.Members), time.Since(begin).Seconds())
	return e
}

// TestEnvironment runs at the largest size: MaxMembers members, two of them full (member1 and
// member2, which the workload checks use) and the others light, so that one start covers both
// kinds and the scale.
func TestEnvironment(t *testing.T) {
	e := startForTest(t, Options{Members: MaxMembers, LightMembers: MaxMembers - 2})
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = e.Stop()
		}
	})
	ctx := t.Context()

	t.Run("every cluster is ready through its kubeconfig", func(t *testing.T) {
		require.Len(t, e.Clusters(), 2+MaxMembers)
		for _, c := range e.Clusters() {
			cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
			require.NoError(t, err, c.Name)
			assert.False(t, cfg.Insecure, "kubeconfig of %s skips TLS verification", c.Name)
			assert.NotEmpty(t, cfg.CAData, "kubeconfig of %s has no CA", c.Name)
			assert.NoError(t, readyz(ctx, cfg), c.Name)
		}
	})

	t.Run("members are registered in the control plane", func(t *testing.T) {
		cp := e.ControlPlane.Client()
		for _, m := range e.Members {
			obj, err := e.ControlPlane.Dynamic().Resource(ClusterGVR).Get(ctx, m.Name, metav1.GetOptions{})
			require.NoError(t, err, "Cluster %s", m.Name)
			endpoint, _, _ := unstructured.NestedString(obj.Object, "spec", "apiEndpoint")
			syncMode, _, _ := unstructured.NestedString(obj.Object, "spec", "syncMode")
			secretRef, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "secretRef")
			assert.Equal(t, m.Server, endpoint)
			assert.Equal(t, "Push", syncMode)
			assert.Equal(t, map[string]string{"namespace": ClusterSecretNamespace, "name": m.Name}, secretRef)

			secret, err := cp.CoreV1().Secrets(ClusterSecretNamespace).Get(ctx, m.Name, metav1.GetOptions{})
			require.NoError(t, err, "Secret of %s", m.Name)
			// The Secret's credentials reach the member with verified TLS.
			cfg := &rest.Config{Host: endpoint, BearerToken: string(secret.Data["token"]),
				TLSClientConfig: rest.TLSClientConfig{CAData: secret.Data["caBundle"]}}
			assert.NoError(t, readyz(ctx, cfg), "member %s through its Secret", m.Name)

			_, err = cp.CoreV1().Namespaces().Get(ctx, ExecutionNamespacePrefix+m.Name, metav1.GetOptions{})
			assert.NoError(t, err, "execution namespace of %s", m.Name)
		}
	})

	t.Run("every node has loopback addresses only, one per cluster", func(t *testing.T) {
		seen := map[string]string{}
		for _, c := range e.Clusters() {
			nodes, err := c.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			require.NoError(t, err, c.Name)
			if c.NodeName == "" {
				assert.Empty(t, nodes.Items, "cluster %s has nodes", c.Name)
				continue
			}
			require.Len(t, nodes.Items, 1, c.Name)
			node := nodes.Items[0]
			require.NotEmpty(t, node.Status.Addresses, "node of %s", c.Name)
			for _, a := range node.Status.Addresses {
				if a.Type == corev1.NodeHostName {
					continue
				}
				ip := net.ParseIP(a.Address)
				require.NotNil(t, ip, "%s address %q of %s is no IP", a.Type, a.Address, node.Name)
				assert.True(t, ip.IsLoopback(), "%s address %s of %s is not loopback", a.Type, a.Address, node.Name)
				if a.Type == corev1.NodeInternalIP {
					assert.Equal(t, c.NodeIP, a.Address, node.Name)
					assert.Empty(t, seen[a.Address], "%s shares its address with %s", c.Name, seen[a.Address])
					seen[a.Address] = c.Name
				}
			}
			// API servers dial the kubelet endpoint (logs, exec): KWOK serves it there.
			port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
			require.NotZero(t, port, "kubelet port of %s", node.Name)
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(c.NodeIP, strconv.Itoa(int(port))), 2*time.Second)
			require.NoError(t, err, "kubelet endpoint of %s", node.Name)
			conn.Close()
		}
	})

	t.Run("light members run kube-apiserver and KWOK only", func(t *testing.T) {
		procs := e.Processes()
		light := 0
		for _, m := range e.Members {
			assert.Contains(t, procs, m.Name+"-"+binAPI)
			assert.Contains(t, procs, m.Name+"-"+binKWOK)
			for _, bin := range []string{binKCM, binSched} {
				_, running := procs[m.Name+"-"+bin]
				assert.Equal(t, !m.Light, running, "%s of %s (light: %t)", bin, m.Name, m.Light)
			}
			if m.Light {
				light++
			}
		}
		assert.Equal(t, MaxMembers-2, light)
		assert.False(t, e.Member("member1").Light || e.Member("member2").Light, "member1 and member2 must be full")
	})

	t.Run("nothing connected outside loopback", func(t *testing.T) {
		assert.Empty(t, e.OutsideConnections())
	})

	t.Run("a Deployment on member1 gets endpoints in member1's pod CIDR", func(t *testing.T) {
		member1 := e.Member("member1")
		require.NotNil(t, member1)
		applyWebApp(t, member1.Client())
		_, cidr, err := net.ParseCIDR(member1.PodCIDR)
		require.NoError(t, err)
		var addresses []string
		require.Eventually(t, func() bool {
			addresses = readyEndpointAddresses(ctx, member1.Client(), "web")
			return len(addresses) == 2
		}, 60*time.Second, 250*time.Millisecond, "EndpointSlice of web never had 2 ready endpoints")
		for _, a := range addresses {
			assert.True(t, cidr.Contains(net.ParseIP(a)), "endpoint %s outside %s", a, member1.PodCIDR)
		}
	})

	t.Run("the API server reaches KWOK's kubelet endpoint for a pod's log", func(t *testing.T) {
		member1 := e.Member("member1")
		pods, err := member1.Client().CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		require.NoError(t, err)
		require.NotEmpty(t, pods.Items)
		log, err := member1.Client().CoreV1().Pods("default").GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		assert.Equal(t, member1.PodLog(), string(log))
	})

	t.Run("the Temporal UI answers", func(t *testing.T) {
		resp, err := http.Get(e.Temporal.UIURL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.NoError(t, e.checkTemporalFrontend(ctx))
	})

	t.Run("a member's apiserver can be stopped and started", func(t *testing.T) {
		member1 := e.Member("member1")
		require.NoError(t, e.StopMemberAPIServer("member1"))
		assert.Error(t, readyz(ctx, member1.RESTConfig), "member1 still answers after StopMemberAPIServer")
		assert.NoError(t, readyz(ctx, e.Member("member2").RESTConfig), "member2 must be unaffected")

		begin := time.Now()
		require.NoError(t, e.StartMemberAPIServer("member1"))
		t.Logf("member1 apiserver back in %.1fs", time.Since(begin).Seconds())
		assert.NoError(t, readyz(ctx, member1.RESTConfig))
		_, err := member1.Client().AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		assert.NoError(t, err, "state survives the restart")
	})

	t.Run("the Temporal dev server outlives cancelled requests", func(t *testing.T) {
		assertOutlivesCancelledRequests(t, e.Temporal.Address, e.Temporal.Namespace)
	})

	t.Run("Temporal restarts in memory: workflows are gone, search attributes stay", func(t *testing.T) {
		c, err := client.Dial(client.Options{HostPort: e.Temporal.Address, Namespace: e.Temporal.Namespace})
		require.NoError(t, err)
		defer c.Close()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "env-test", TaskQueue: "env-test"}, "EnvTestIdle")
		require.NoError(t, err)
		_, err = c.DescribeWorkflowExecution(ctx, run.GetID(), "")
		require.NoError(t, err)

		begin := time.Now()
		require.NoError(t, e.RestartTemporal(ctx))
		t.Logf("Temporal restarted in %.1fs", time.Since(begin).Seconds())
		assert.NoError(t, e.checkTemporalFrontend(ctx), "namespace and search attributes")
		_, err = c.DescribeWorkflowExecution(ctx, run.GetID(), "")
		var notFound *serviceerror.NotFound
		assert.ErrorAs(t, err, &notFound, "the workflow outlived the restart")
	})

	t.Run("Stop leaves no process and no directory behind", func(t *testing.T) {
		assertStopsClean(t, e)
		stopped = true
	})
}

// assertStopsClean stops e and checks that none of its processes and not its directory is left.
func assertStopsClean(t *testing.T, e *Env) {
	t.Helper()
	e.mu.Lock()
	var pids []int
	for _, p := range e.procs {
		pids = append(pids, p.pid())
	}
	e.mu.Unlock()
	require.NotEmpty(t, pids)
	begin := time.Now()
	require.NoError(t, e.Stop())
	t.Logf("stopped %d processes in %.1fs", len(pids), time.Since(begin).Seconds())
	for _, pid := range pids {
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d still exists", pid)
	}
	if !e.opts.Keep {
		_, err := os.Stat(e.Dir)
		assert.ErrorIs(t, err, os.ErrNotExist, "%s not removed", e.Dir)
	}
}

func readyz(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return errors.New("/readyz answered " + string(body))
	}
	return nil
}

func applyWebApp(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	replicas := int32(2)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}
	_, err := client.AppsV1().Deployments("default").Create(t.Context(), deployment, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Services("default").Create(t.Context(), service, metav1.CreateOptions{})
	require.NoError(t, err)
}

// readyEndpointAddresses lists the ready endpoint addresses of a Service's EndpointSlices.
func readyEndpointAddresses(ctx context.Context, client kubernetes.Interface, service string) []string {
	slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service,
	})
	if err != nil {
		return nil
	}
	var addresses []string
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				addresses = append(addresses, ep.Addresses...)
			}
		}
	}
	return addresses
}
