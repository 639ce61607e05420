package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// The chart the service takes its identities from, and the namespace it installs into.
const (
	chartPath      = "deploy/charts/karmadaflow"
	chartNamespace = "karmadaflow-system"
)

// chartKinds are the kinds of the chart a test may apply, and their resources.
var chartKinds = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Service":            {Version: "v1", Resource: "services"},
	"APIService":         {Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
	"ResourceQuota":      {Version: "v1", Resource: "resourcequotas"},
}

// identityKinds are the kinds of the chart that make up an identity: what the worker and the
// starter are, and what they may do. The rest of the chart (Deployments, the bootstrap Job,
// CRDs) is not needed to run the binaries here.
var identityKinds = []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// AgentControlPlaneKinds are the kinds of what the chart's controlPlane target gives the agents
// of Pull clusters: their identities and the quota of their execution namespaces.
var AgentControlPlaneKinds = append(slices.Clone(identityKinds), "ResourceQuota")

// kubeconfigs are the kubeconfig files one component runs with.
type kubeconfigs struct{ host, karmada string }

// installIdentities gives the worker and the starter the identities a real installation gives
// them: the chart's ServiceAccounts and RBAC are applied to the host cluster and the control
// plane, and each component gets a kubeconfig per API server with a token of its own
// ServiceAccount there. Nothing runs as system:masters.
func installIdentities(ctx context.Context, e *env.Env, dir string, values []string) (map[string]kubeconfigs, error) {
	out := map[string]kubeconfigs{}
	for _, target := range []struct {
		name    string
		cluster *env.Cluster
	}{{"host", e.Host}, {"controlPlane", e.ControlPlane}} {
		if err := ApplyChartIdentities(ctx, target.cluster, append([]string{"target=" + target.name}, values...)); err != nil {
			return nil, err
		}
		for _, component := range []string{"worker", "starter"} {
			path := filepath.Join(dir, component+"-"+target.name+".kubeconfig")
			if err := writeTokenKubeconfig(ctx, target.cluster, "karmadaflow-"+component, path); err != nil {
				return nil, err
			}
			k := out[component]
			if target.name == "host" {
				k.host = path
			} else {
				k.karmada = path
			}
			out[component] = k
		}
	}
	return out, nil
}

// ApplyChartIdentities renders the chart with values (key=value each, target among them) and
// applies its ServiceAccounts and RBAC, and nothing else, to the cluster.
func ApplyChartIdentities(ctx context.Context, cluster *env.Cluster, values []string) error {
	return ApplyChartObjects(ctx, cluster, values, identityKinds...)
}

// ApplyChartObjects renders the chart with values (key=value each, target among them) and
// applies its objects of the given kinds (Namespaces, RBAC, Services, APIServices) to the
// cluster.
func ApplyChartObjects(ctx context.Context, cluster *env.Cluster, values []string, kinds ...string) error {
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	objs, err := renderChart(ctx, root, values)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, cluster, objs, kinds); err != nil {
		return fmt.Errorf("the chart's %v in %s: %w", kinds, cluster.Name, err)
	}
	return nil
}

// renderChart runs `helm template` on the chart with values: key=value each, or
// file:key=path for a value read from a file (helm's --set-file).
func renderChart(ctx context.Context, root string, values []string) ([]*unstructured.Unstructured, error) {
	args := []string{"template", "karmadaflow", filepath.Join(root, chartPath), "--namespace", chartNamespace}
	for _, v := range values {
		if file, ok := strings.CutPrefix(v, "file:"); ok {
			args = append(args, "--set-file", file)
		} else {
			args = append(args, "--set", v)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "helm"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %v: %v\n%s", values, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading what helm rendered: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// applyObjects server-side-applies the objects of kinds among objs, namespaces first. An object
// in a namespace that does not exist yet (one a test will use) gets its namespace created.
func applyObjects(ctx context.Context, cluster *env.Cluster, objs []*unstructured.Unstructured, kinds []string) error {
	for _, pass := range []func(kind string) bool{
		func(kind string) bool { return kind == "Namespace" },
		func(kind string) bool { return kind != "Namespace" },
	} {
		for _, obj := range objs {
			gvr, ok := chartKinds[obj.GetKind()]
			if !ok || !slices.Contains(kinds, obj.GetKind()) || !pass(obj.GetKind()) {
				continue
			}
			if ns := obj.GetNamespace(); ns != "" {
				_, err := cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
			}
			_, err := cluster.Dynamic().Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
				metav1.ApplyOptions{FieldManager: "karmadaflow-e2e", Force: true})
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	return nil
}

// writeTokenKubeconfig writes a kubeconfig for the cluster with a day-long token of the
// ServiceAccount chartNamespace/account.
func writeTokenKubeconfig(ctx context.Context, cluster *env.Cluster, account, path string) error {
	token, err := cluster.Client().CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](86400)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token of %s/%s in %s: %w", chartNamespace, account, cluster.Name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster.Name] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.RESTConfig.CAData}
	cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts[account] = &clientcmdapi.Context{Cluster: cluster.Name, AuthInfo: account}
	cfg.CurrentContext = account
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// StartAgent runs the agent of the Pull cluster member (worker --cluster) as the chart installs
// it, with the identities of AgentIdentities, and no Temporal setting; it waits until the
// agent is ready. Its instance is "worker-agent-<cluster>", for Kill and StopInstance.
func (s *Service) StartAgent(ctx context.Context, member *env.Cluster) error {
	memberKubeconfig, controlPlaneKubeconfig, err := s.AgentIdentities(ctx, member)
	if err != nil {
		return err
	}
	return s.StartInstance(ctx, AgentInstance(member.Name), []string{"--cluster", member.Name,
		"--host-kubeconfig", memberKubeconfig, "--karmada-kubeconfig", controlPlaneKubeconfig})
}

// AgentWorkQuota is the ResourceQuota the chart puts on a Pull cluster's execution namespace.
const AgentWorkQuota = "karmadaflow-agent-works"

// WaitForQuotaCounted waits until kube-controller-manager's quota controller has counted
// everything the ResourceQuota namespace/name bounds: until then the API server refuses every
// object the quota names there ("status unknown for quota").
func WaitForQuotaCounted(ctx context.Context, cluster *env.Cluster, namespace, name string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := cluster.Client().CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for resource := range q.Spec.Hard {
			if _, ok := q.Status.Used[resource]; !ok {
				last = fmt.Errorf("%s not counted yet", resource)
				return false, nil
			}
		}
		return len(q.Spec.Hard) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the quota %s/%s in %s: %w (last: %v)", namespace, name, cluster.Name, err, last)
	}
	return nil
}

// AgentIdentities makes the chart's identities of the agent of the Pull cluster member, in the
// member (target member) and in the control plane (agent.pullClusters, with the quota of its
// execution namespace, once counted), and returns a kubeconfig of each, with a token of its
// ServiceAccount.
func (s *Service) AgentIdentities(ctx context.Context, member *env.Cluster) (memberKubeconfig, controlPlaneKubeconfig string, err error) {
	dir := filepath.Join(s.env.Dir, "identities")
	if err := ApplyChartIdentities(ctx, member, append([]string{"target=member", "agent.cluster=" + member.Name}, s.opts.ChartValues...)); err != nil {
		return "", "", err
	}
	if err := ApplyChartObjects(ctx, s.env.ControlPlane, append([]string{"target=controlPlane", "agent.pullClusters={" + member.Name + "}"}, s.opts.ChartValues...),
		AgentControlPlaneKinds...); err != nil {
		return "", "", err
	}
	if err := WaitForQuotaCounted(ctx, s.env.ControlPlane, "karmada-es-"+member.Name, AgentWorkQuota); err != nil {
		return "", "", err
	}
	memberKubeconfig = filepath.Join(dir, "agent-"+member.Name+"-member.kubeconfig")
	if err := writeTokenKubeconfig(ctx, member, "karmadaflow-agent", memberKubeconfig); err != nil {
		return "", "", err
	}
	controlPlaneKubeconfig = filepath.Join(dir, "agent-"+member.Name+"-controlPlane.kubeconfig")
	if err := writeTokenKubeconfig(ctx, s.env.ControlPlane, "karmadaflow-agent-"+member.Name, controlPlaneKubeconfig); err != nil {
		return "", "", err
	}
	return memberKubeconfig, controlPlaneKubeconfig, nil
}

// AgentInstance is the instance name of the agent of a Pull cluster.
func AgentInstance(cluster string) string { return agentInstancePrefix + cluster }

// agentInstancePrefix begins the instance name of every agent.
const agentInstancePrefix = "worker-agent-"

// isAgent tells whether an instance is the agent of a Pull cluster.
func isAgent(instance string) bool { return strings.HasPrefix(instance, agentInstancePrefix) }
