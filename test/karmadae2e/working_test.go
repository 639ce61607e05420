package karmadae2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// Resources of Karmada's API read and written through the new control planes.
var (
	propagationPolicies  = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	resourceBindings     = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}
	deploymentsGVR       = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crdsGVR              = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	propagationPolicyCRD = "propagationpolicies.policy.karmada.io"
)

// instance is one Karmada to install and try.
type instance struct {
	namespace, name string
	components      *operatorv1alpha1.KarmadaComponents
	search          bool // karmada-search is enabled: its proxy path is tried too
	annotations     map[string]string
}

// TestWorkingKarmada installs two instances at once, a NodePort instance with the default
// components and one that also enables karmada-search, karmada-descheduler and
// karmada-metrics-adapter, and tries each as a user of Karmada would.
func TestWorkingKarmada(t *testing.T) {
	nodePort := &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}
	instances := []instance{
		{namespace: nsDefault, name: "default", components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: nodePort}},
		{namespace: nsFull, name: "full", search: true, components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer:      nodePort,
			KarmadaSearch:         &operatorv1alpha1.KarmadaSearch{},
			KarmadaDescheduler:    &operatorv1alpha1.KarmadaDescheduler{},
			KarmadaMetricsAdapter: &operatorv1alpha1.KarmadaMetricsAdapter{},
		}},
	}
	begin := time.Now()
	for _, in := range instances {
		createKarmada(t, in)
	}
	var wg sync.WaitGroup
	for _, in := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitKarmadaReady(t, in, 10*time.Minute)
			t.Logf("%s/%s Ready %.1fs after create", in.namespace, in.name, time.Since(begin).Seconds())
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, in := range instances {
		t.Run(in.name, func(t *testing.T) {
			step := timer(t)
			checkEveryComponentReady(t, in)
			cp := controlPlane(t, in)
			checkCRDs(t, cp)
			step("components and CRDs checked")
			joinMember(t, cp, "member1")
			step("member1 joined and Ready")
			propagate(t, cp, in)
			step("Deployment propagated")
			checkClusterProxy(t, cp, in)
			if in.search {
				checkSearchProxy(t, cp, in)
			}
			step("proxies answered")
			checkDeletion(t, in)
			step("deleted")
		})
	}
}

func createKarmada(t *testing.T, in instance) {
	createKarmadaSpec(t, in, operatorv1alpha1.KarmadaSpec{Components: in.components})
}

// createKarmadaSpec creates the instance's namespace and Karmada with spec.
func createKarmadaSpec(t *testing.T, in instance, spec operatorv1alpha1.KarmadaSpec) {
	ctx := context.Background()
	_, err := testEnv.Host.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.namespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	k := &operatorv1alpha1.Karmada{TypeMeta: metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"},
		ObjectMeta: metav1.ObjectMeta{Name: in.name, Namespace: in.namespace, Annotations: in.annotations},
		Spec:       spec}
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	_, err = testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getKarmada(in instance) (*operatorv1alpha1.Karmada, bool, error) {
	var k operatorv1alpha1.Karmada
	found, err := kube.Get(context.Background(), testEnv.Host.Dynamic(), kube.Karmadas, in.namespace, in.name, &k)
	return &k, found, err
}

// waitKarmadaReady waits for Ready=True/Completed, then logs the played pods' state if it
// never comes.
func waitKarmadaReady(t *testing.T, in instance, timeout time.Duration) {
	var last string
	err := poll(timeout, func() (bool, error) {
		k, found, err := getKarmada(in)
		if err != nil || !found {
			return false, err
		}
		cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		if cond != nil {
			last = cond.Reason + ": " + cond.Message
		}
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == operatorv1alpha1.ReasonCompleted &&
			k.Status.ObservedGeneration == k.Generation, nil
	})
	if err != nil {
		pods, _ := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s: phase %s ready %v %s", p.Name, p.Status.Phase, podReady(&p), containerStates(&p))
		}
		t.Errorf("Karmada %s/%s not Ready within %s (last: %s): %v", in.namespace, in.name, timeout, last, err)
	}
}

// checkEveryComponentReady: every workload of the instance has rolled out, and each of its
// pods is Ready because its own readiness probe passed on a process that runs.
func checkEveryComponentReady(t *testing.T, in instance) {
	ctx := context.Background()
	k, _, err := getKarmada(in)
	require.NoError(t, err)
	names := prov.NamesFor(in.name)
	deployments := []string{prov.APIServer.Suffix, prov.AggregatedAPIServer.Suffix}
	for _, c := range prov.InstalledComponents(k) {
		deployments = append(deployments, c.Suffix)
	}
	replicas := 0
	for _, suffix := range deployments {
		d, err := testEnv.Host.Client().AppsV1().Deployments(in.namespace).Get(ctx, names.Of(suffix), metav1.GetOptions{})
		if assert.NoError(t, err, suffix) {
			assert.Equal(t, ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas, "%s ready replicas", d.Name)
			replicas += int(ptr.Deref(d.Spec.Replicas, 1))
		}
	}
	etcd, err := testEnv.Host.Client().AppsV1().StatefulSets(in.namespace).Get(ctx, names.Of(prov.SuffixEtcd), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.Deref(etcd.Spec.Replicas, 1), etcd.Status.ReadyReplicas, "etcd ready replicas")
	replicas += int(ptr.Deref(etcd.Spec.Replicas, 1))
	pods, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: prov.InstanceSelector(in.name)})
	require.NoError(t, err)
	require.Len(t, pods.Items, replicas, "one pod per replica of each workload")
	for _, p := range pods.Items {
		assert.True(t, podReady(&p), "pod %s Ready", p.Name)
		require.Len(t, p.Status.ContainerStatuses, len(p.Spec.Containers), p.Name)
		for _, c := range p.Status.ContainerStatuses {
			assert.NotNil(t, c.State.Running, "%s/%s running", p.Name, c.Name)
		}
		assert.NotEmpty(t, playedProcesses(p.Namespace, p.Name), "a process runs for pod %s", p.Name)
	}
}

// controlPlane is a REST config of the instance's new control plane from its admin
// kubeconfig: the NodePort endpoint the workflow computed, TLS verified against its CA.
func controlPlane(t *testing.T, in instance) *rest.Config {
	secret, err := testEnv.Host.Client().CoreV1().Secrets(in.namespace).Get(context.Background(), prov.NamesFor(in.name).Of(prov.SuffixAdminConfig), metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
	require.NoError(t, err)
	require.False(t, cfg.Insecure)
	require.NotEmpty(t, cfg.CAData)
	return cfg
}

// checkCRDs: the whole CRD set of the release is served, policy.karmada.io included.
func checkCRDs(t *testing.T, cp *rest.Config) {
	client := dynamic.NewForConfigOrDie(cp)
	crds, err := client.Resource(crdsGVR).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	groups := map[string]int{}
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		groups[group]++
	}
	t.Logf("CRDs by group: %v", groups)
	for _, group := range []string{"policy.karmada.io", "work.karmada.io", "config.karmada.io", "networking.karmada.io",
		"autoscaling.karmada.io", "apps.karmada.io", "remedy.karmada.io", "multicluster.x-k8s.io"} {
		assert.NotZero(t, groups[group], "no CRD of %s", group)
	}
	_, err = client.Resource(crdsGVR).Get(context.Background(), propagationPolicyCRD, metav1.GetOptions{})
	assert.NoError(t, err)
}

// joinMember registers a member in Push mode as `karmadactl join` does: the member's
// credentials in a Secret of karmada-cluster (keys caBundle and token, and an impersonator
// Secret), and a Cluster naming them. Karmada's own cluster status controller must mark it
// Ready.
func joinMember(t *testing.T, cp *rest.Config, member string) {
	ctx := context.Background()
	m := memberCluster(t, member)
	controlPlane := kubernetes.NewForConfigOrDie(cp)
	_, err := controlPlane.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karmada-cluster"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	caBundle := m.RESTConfig.CAData
	if len(caBundle) == 0 {
		caBundle, err = os.ReadFile(m.RESTConfig.CAFile)
		require.NoError(t, err)
	}
	for _, name := range []string{member, member + "-impersonator"} {
		_, err := controlPlane.CoreV1().Secrets("karmada-cluster").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "karmada-cluster"},
			Data:       map[string][]byte{"caBundle": caBundle, "token": []byte(m.RESTConfig.BearerToken)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": member},
		"spec": map[string]any{
			"syncMode":              "Push",
			"apiEndpoint":           m.Server,
			"secretRef":             map[string]any{"namespace": "karmada-cluster", "name": member},
			"impersonatorSecretRef": map[string]any{"namespace": "karmada-cluster", "name": member + "-impersonator"},
		},
	}}
	client := dynamic.NewForConfigOrDie(cp)
	_, err = client.Resource(kube.Clusters).Create(ctx, cluster, metav1.CreateOptions{})
	require.NoError(t, err, "create Cluster through karmada-aggregated-apiserver")
	require.NoError(t, poll(3*time.Minute, func() (bool, error) {
		got, err := client.Resource(kube.Clusters).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	}), "Cluster %s marked Ready by karmada-controller-manager", member)
}

// propagate creates a Deployment and a PropagationPolicy naming member1: the scheduler binds
// it to member1 and the execution controller creates it there.
func propagate(t *testing.T, cp *rest.Config, in instance) {
	ctx := context.Background()
	ns, name := "demo-"+in.name, "nginx-"+in.name
	kube := kubernetes.NewForConfigOrDie(cp)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": name}
	_, err = kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "create Deployment (through karmada-webhook)")
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"resourceSelectors": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}},
			"placement":         map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"member1"}}},
		},
	}}
	client := dynamic.NewForConfigOrDie(cp)
	_, err = client.Resource(propagationPolicies).Namespace(ns).Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, poll(2*time.Minute, func() (bool, error) {
		rb, err := client.Resource(resourceBindings).Namespace(ns).Get(ctx, name+"-deployment", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		clusters, _, _ := unstructured.NestedSlice(rb.Object, "spec", "clusters")
		for _, c := range clusters {
			if c, ok := c.(map[string]any); ok && c["name"] == "member1" {
				return true, nil
			}
		}
		return false, nil
	}), "ResourceBinding %s/%s-deployment scheduled to member1 by karmada-scheduler", ns, name)
	member := memberCluster(t, "member1")
	var propagated *appsv1.Deployment
	require.NoError(t, poll(2*time.Minute, func() (bool, error) {
		propagated, err = member.Client().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	}), "Deployment %s/%s in member1", ns, name)
	// Karmada's execution controller wrote it, from the Work in the member's execution
	// namespace.
	assert.Equal(t, "true", propagated.Labels["karmada.io/managed"], "labels %v", propagated.Labels)
	assert.Equal(t, "karmada-es-member1", propagated.Annotations["work.karmada.io/namespace"], "annotations %v", propagated.Annotations)
	t.Logf("%s/%s propagated into member1 by Work %s/%s", ns, name,
		propagated.Annotations["work.karmada.io/namespace"], propagated.Annotations["work.karmada.io/name"])
}

// checkClusterProxy reads the member through the aggregated API server's clusters/proxy.
func checkClusterProxy(t *testing.T, cp *rest.Config, in instance) {
	kube := kubernetes.NewForConfigOrDie(cp)
	path := "/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/apis/apps/v1/namespaces/demo-" + in.name + "/deployments/nginx-" + in.name
	body, err := kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
	require.NoError(t, err, "GET %s", path)
	assert.Contains(t, string(body), `"name":"nginx-`+in.name+`"`)
}

// checkSearchProxy lists Deployments through karmada-search's proxy, after a
// ResourceRegistry caches member1's Deployments.
func checkSearchProxy(t *testing.T, cp *rest.Config, in instance) {
	ctx := context.Background()
	registry := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "search.karmada.io/v1alpha1", "kind": "ResourceRegistry",
		"metadata": map[string]any{"name": "deployments"},
		"spec": map[string]any{
			"targetCluster":     map[string]any{"clusterNames": []any{"member1"}},
			"resourceSelectors": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}},
		},
	}}
	_, err := dynamic.NewForConfigOrDie(cp).Resource(kube.ResourceRegistries).Create(ctx, registry, metav1.CreateOptions{})
	require.NoError(t, err)
	kube := kubernetes.NewForConfigOrDie(cp)
	path := "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy/apis/apps/v1/namespaces/demo-" + in.name + "/deployments"
	var last string
	err = poll(2*time.Minute, func() (bool, error) {
		body, err := kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		last = fmt.Sprint(string(body), err)
		return err == nil && strings.Contains(string(body), `"name":"nginx-`+in.name+`"`), nil
	})
	require.NoError(t, err, "GET %s through karmada-search (last: %.300s)", path, last)
}

// checkDeletion deletes the Karmada: every played process of it ends and no object of it is
// left in the host cluster.
func checkDeletion(t *testing.T, in instance) {
	ctx := context.Background()
	require.NoError(t, testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace).Delete(ctx, in.name, metav1.DeleteOptions{}))
	require.NoError(t, poll(3*time.Minute, func() (bool, error) {
		_, found, err := getKarmada(in)
		return err == nil && !found, nil
	}), "Karmada %s/%s gone", in.namespace, in.name)
	require.NoError(t, poll(2*time.Minute, func() (bool, error) {
		pods, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0 && len(playedProcesses(in.namespace, "")) == 0, nil
	}), "pods and processes of %s/%s gone; left: %v", in.namespace, in.name, playedProcesses(in.namespace, ""))
	for _, gvr := range []schema.GroupVersionResource{deploymentsGVR, {Group: "apps", Version: "v1", Resource: "statefulsets"},
		{Version: "v1", Resource: "services"}, {Version: "v1", Resource: "secrets"}} {
		list, err := testEnv.Host.Dynamic().Resource(gvr).Namespace(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: prov.InstanceSelector(in.name)})
		require.NoError(t, err)
		assert.Empty(t, list.Items, "%s of %s/%s left", gvr.Resource, in.namespace, in.name)
	}
}

// playedProcesses are the command lines of the processes the pod runner runs for pods of
// namespace (and pod, if not empty): their arguments name files under the pod's directory.
func playedProcesses(namespace, pod string) []string {
	dir := filepath.Join(testEnv.Dir, "pods", namespace) + "/"
	if pod != "" {
		dir += pod + "/"
	}
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), dir) || strings.HasPrefix(string(data), "unshare") {
			continue
		}
		out = append(out, strings.ReplaceAll(string(data), "\x00", " "))
	}
	return out
}

func memberCluster(t *testing.T, name string) *env.Cluster {
	for _, m := range testEnv.Members {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerStates(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			parts = append(parts, fmt.Sprintf("%s running (restarts %d)", c.Name, c.RestartCount))
		case c.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s: %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message))
		case c.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated %s: %s", c.Name, c.State.Terminated.Reason, c.State.Terminated.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// timer logs, at each call, what was done and how long it took since the last call.
func timer(t *testing.T) func(what string) {
	last := time.Now()
	return func(what string) {
		t.Logf("%s in %.1fs", what, time.Since(last).Seconds())
		last = time.Now()
	}
}

// poll calls check every second until it returns true, an error, or timeout passes.
func poll(timeout time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		time.Sleep(time.Second)
	}
}
