package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// Role is what a cluster is for in the environment.
type Role string

const (
	// RoleHost is the cluster Karmada instances are installed into.
	RoleHost Role = "host"
	// RoleControlPlane is the Karmada control plane holding the Karmada CRDs.
	RoleControlPlane Role = "control-plane"
	// RoleMember is a member cluster that workloads are propagated to.
	RoleMember Role = "member"
)

const (
	serviceCIDR      = "10.96.0.0/16"
	kwokNodeSelector = "kwok.x-k8s.io/node=fake"
	apiserverTimeout = 3 * time.Minute
	nodeReadyTimeout = 3 * time.Minute
)

// Cluster is one Kubernetes cluster of the environment.
type Cluster struct {
	Name       string
	Role       Role
	Kubeconfig string       // path of an admin kubeconfig (CA-verified TLS, bearer token)
	RESTConfig *rest.Config // admin config; callers may copy it
	PodCIDR    string       // pod IPs KWOK assigns; empty for the control plane (no nodes)
	Server     string       // https URL of the apiserver
	NodeName   string       // the fake node; empty for the control plane
	NodeIP     string       // the fake node's InternalIP, a loopback address of its own
	// Light marks a light member (Options.LightMembers): kube-apiserver and KWOK only, with
	// no kube-controller-manager and no kube-scheduler. Its API works as any member's (the
	// environment registers it in the control plane, karmadaflow and Karmada apply to it,
	// probe it and watch it), its node turns Ready, but nothing acts on what is written:
	//   - no EndpointSlices are derived from Services: whoever needs slices there writes them
	//     directly, as a benchmark does;
	//   - Deployments get no ReplicaSets and no pods, and pods are never scheduled (KWOK
	//     still plays a pod written with spec.nodeName set to the node);
	//   - namespaces get no default ServiceAccount and there is no service account token
	//     controller: a pod is refused until whoever writes it creates its ServiceAccount
	//     ("default" when it names none); the environment's credentials are static tokens
	//     and need neither;
	//   - a deleted namespace stays Terminating (no namespace controller) and dependents are
	//     not collected when their owner goes (no garbage collector);
	//   - its kube-apiserver runs with the flags of lightAPIServerArgs.
	Light bool

	dir   string // certificates, keys and component state
	port  int    // apiserver secure port
	token string // admin bearer token
	caPEM []byte // CA of the apiserver's serving certificate

	componentPorts map[string]int // kcm, scheduler, kwok serving ports

	mu         sync.Mutex
	apiserver  *process
	components []*process // kube-controller-manager, kube-scheduler
	kwok       *process   // kept running by Env.keepKWOKRunning

	clientOnce sync.Once
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	clientErr  error
}

// Client returns a typed admin client.
func (c *Cluster) Client() kubernetes.Interface {
	c.initClients()
	return c.client
}

// Dynamic returns a dynamic admin client.
func (c *Cluster) Dynamic() dynamic.Interface {
	c.initClients()
	return c.dynamic
}

func (c *Cluster) initClients() {
	c.clientOnce.Do(func() {
		c.client, c.clientErr = kubernetes.NewForConfig(c.RESTConfig)
		if c.clientErr == nil {
			c.dynamic, c.clientErr = dynamic.NewForConfig(c.RESTConfig)
		}
	})
	if c.clientErr != nil {
		panic(fmt.Sprintf("clients for cluster %s: %v", c.Name, c.clientErr))
	}
}

// prepare writes the cluster's CA, serving certificate, service-account key, token file and
// kubeconfig, so that everything about the cluster is known before anything starts.
func (c *Cluster) prepare(envDir string, port int, componentPorts map[string]int) error {
	c.dir = filepath.Join(envDir, c.Name)
	c.port = port
	c.componentPorts = componentPorts
	c.Server = "https://127.0.0.1:" + strconv.Itoa(port)
	c.Kubeconfig = filepath.Join(envDir, c.Name+".kubeconfig")
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}

	ca, err := pki.NewAuthority(c.Name + "-ca")
	if err != nil {
		return err
	}
	serving, err := ca.Issue(pki.LeafSpec{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		Server:     true,
	}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	sa, err := pki.NewSigningKey()
	if err != nil {
		return err
	}
	if c.token, err = randomToken(); err != nil {
		return err
	}
	c.caPEM = ca.Pair().Cert
	files := map[string][]byte{
		"ca.crt":        c.caPEM,
		"apiserver.crt": serving.Cert,
		"apiserver.key": serving.Key,
		"sa.key":        sa.Key,
		"sa.pub":        sa.Cert,
		"tokens.csv":    []byte(c.token + ",admin,admin,system:masters\n"),
	}
	if err := issueFrontProxyPairs(files); err != nil {
		return fmt.Errorf("front-proxy certificates of cluster %s: %w", c.Name, err)
	}
	if c.NodeIP != "" {
		if err := issueKubeletPairs(ca, c.NodeIP, files); err != nil {
			return fmt.Errorf("kubelet certificates of cluster %s: %w", c.Name, err)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s of cluster %s: %w", name, c.Name, err)
		}
	}

	c.RESTConfig = &rest.Config{
		Host:            c.Server,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		QPS:             100,
		Burst:           200,
	}
	return c.writeKubeconfig(c.Kubeconfig)
}

// issueKubeletPairs adds to files the serving certificate of KWOK's kubelet endpoint on
// nodeIP and the client certificate the API server presents there, both of the cluster's CA.
func issueKubeletPairs(ca *pki.Authority, nodeIP string, files map[string][]byte) error {
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "kwok", IPs: []net.IP{net.ParseIP(nodeIP)}, Server: true}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	client, err := ca.Issue(pki.LeafSpec{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true},
		pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	files["kwok.crt"], files["kwok.key"] = serving.Cert, serving.Key
	files["kubelet-client.crt"], files["kubelet-client.key"] = client.Cert, client.Key
	return nil
}

// frontProxyClient is the name the aggregator's client certificate carries, the one name an
// aggregated API server accepts front-proxy headers from.
const frontProxyClient = "front-proxy-client"

// issueFrontProxyPairs adds to files the front-proxy CA and the aggregator's client
// certificate of it: with them an API server vouches for its callers to the API servers
// registered behind it (APIServices), in X-Remote-User, X-Remote-Group and X-Remote-Extra-*.
func issueFrontProxyPairs(files map[string][]byte) error {
	ca, err := pki.NewAuthority("front-proxy-ca")
	if err != nil {
		return err
	}
	client, err := ca.Issue(pki.LeafSpec{CommonName: frontProxyClient, Client: true}, pki.DefaultLeafValidity)
	if err != nil {
		return err
	}
	files["front-proxy-ca.crt"] = ca.Pair().Cert
	files["front-proxy-client.crt"], files["front-proxy-client.key"] = client.Cert, client.Key
	return nil
}

func (c *Cluster) kubeconfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{Token: c.token}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	cfg.CurrentContext = c.Name
	return cfg
}

func (c *Cluster) writeKubeconfig(path string) error {
	if err := writeKubeconfig(c.kubeconfig(), path); err != nil {
		return fmt.Errorf("kubeconfig of cluster %s: %w", c.Name, err)
	}
	return nil
}

// writeKubeconfig writes cfg to path, readable by its owner only.
func writeKubeconfig(cfg *clientcmdapi.Config, path string) error {
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

func (c *Cluster) file(name string) string { return filepath.Join(c.dir, name) }

// lightAPIServerArgs are the kube-apiserver flags of a light member, on top of every
// cluster's: what no light member uses, so twenty of them idle cheaply.
var lightAPIServerArgs = []string{
	// The admission plugin taints a new node not-ready until the node lifecycle controller,
	// a kube-controller-manager's, sees it Ready; a light member has none, and its node is
	// Ready as soon as KWOK says so.
	"--disable-admission-plugins=TaintNodesByCondition",
	// Without a watch cache the server keeps no cache and no etcd watch per resource, whose
	// upkeep is half of an idle light member's CPU (docs/benchmarks.md): lists are read from
	// etcd and each watch is an etcd watch, which the few clients of a light member (KWOK,
	// karmadaflow) afford. Turning priority and fairness off as well saved nothing measurable.
	"--watch-cache=false",
}

func (c *Cluster) apiserverArgs(etcdURL string) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--etcd-prefix=/" + c.Name,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The kubernetes Service cannot have loopback endpoints; nothing here needs them.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + c.file("apiserver-certs"),
		"--tls-cert-file=" + c.file("apiserver.crt"),
		"--tls-private-key-file=" + c.file("apiserver.key"),
		"--token-auth-file=" + c.file("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + c.file("sa.pub"),
		"--service-account-signing-key-file=" + c.file("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--profiling=false",
		// The aggregation layer: APIServices reach their servers with the front-proxy client
		// certificate and the caller in headers.
		"--requestheader-client-ca-file=" + c.file("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.file("front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.file("front-proxy-client.key"),
	}
	if c.Light {
		args = append(args, lightAPIServerArgs...)
	}
	if c.NodeIP == "" {
		return args
	}
	// Logs, exec, attach and port-forward go to KWOK's kubelet endpoint at the node's
	// loopback InternalIP, whose certificate is verified.
	return append(args,
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority="+c.file("ca.crt"),
		"--kubelet-client-certificate="+c.file("kubelet-client.crt"),
		"--kubelet-client-key="+c.file("kubelet-client.key"),
	)
}

// componentBinaries are the binaries the cluster runs beside its kube-apiserver, in the order
// they start: the control plane has no nodes and so no scheduler and no KWOK, a light member
// only KWOK.
func (c *Cluster) componentBinaries() []string {
	switch {
	case c.Role == RoleControlPlane:
		return []string{binKCM}
	case c.Light:
		return []string{binKWOK}
	default:
		return []string{binKCM, binSched, binKWOK}
	}
}

// componentArgs are the flags of one of componentBinaries.
func (c *Cluster) componentArgs(bin string) []string {
	switch bin {
	case binKCM:
		return c.controllerManagerArgs()
	case binSched:
		return c.schedulerArgs()
	default:
		return c.kwokArgs()
	}
}

func (c *Cluster) controllerManagerArgs() []string {
	controllers := "*,-node-ipam-controller,-persistentvolume-binder-controller,-persistentvolume-attach-detach-controller," +
		"-persistentvolume-expander-controller,-cloud-node-lifecycle-controller,-ttl-controller," +
		"-service-lb-controller,-node-route-controller"
	if c.Role == RoleControlPlane {
		// No nodes or pods in the control plane: only what keeps namespaces and owners tidy, and
		// the quota controller, without which a ResourceQuota (the chart's on a Pull cluster's
		// execution namespace) bounds nothing: its admission enforces only what it counted.
		controllers = "namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller," +
			"resourcequota-controller"
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--controllers=" + controllers,
		"--service-account-private-key-file=" + c.file("sa.key"),
		"--root-ca-file=" + c.file("ca.crt"),
		"--cluster-name=" + c.Name,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.componentPorts[binKCM]),
		"--cert-dir=" + c.file("kcm-certs"),
		"--profiling=false",
	}
	if c.Role == RoleControlPlane {
		// A quota of a kind the controller has not discovered yet (the CRDs come after it
		// starts; it looks again every 30s) is counted only at its next full resync, 5 minutes
		// by default, and until then its namespace refuses every Work: resync every 10s.
		args = append(args, "--resource-quota-sync-period=10s")
	}
	return args
}

func (c *Cluster) schedulerArgs() []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.componentPorts[binSched]),
		"--cert-dir=" + c.file("scheduler-certs"),
		"--profiling=false",
	}
}

func (c *Cluster) kwokArgs() []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--config=" + c.file("kwok.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeSelector,
		"--cidr=" + c.PodCIDR,
		"--node-ip=" + c.NodeIP,
		// The kubelet endpoint API servers dial (logs, exec, port-forward) is KWOK's server.
		"--server-address=" + net.JoinHostPort(c.NodeIP, strconv.Itoa(c.componentPorts[binKWOK])),
		"--node-port=" + strconv.Itoa(c.componentPorts[binKWOK]),
		"--tls-cert-file=" + c.file("kwok.crt"),
		"--tls-private-key-file=" + c.file("kwok.key"),
		// KWOK keeps the node's Lease only when told to (its configuration default is not
		// applied to a --config of Stages only). Without it the node-lifecycle controller
		// sees the node go silent every ~50 s and marks every pod NotReady, which KWOK's
		// stages never undo for a Running pod.
		"--node-lease-duration-seconds=40",
	}
}

// waitAPIServer polls /readyz with the admin token, verifying the cluster CA.
func (c *Cluster) waitAPIServer(ctx context.Context, p *process) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}
	return waitFor(ctx, apiserverTimeout, "/readyz of "+c.Server, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s", resp.Status)
		}
		return nil
	}, p)
}

// registerNode creates the fake node KWOK manages.
func (c *Cluster) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.NodeName,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": c.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: c.PodCIDR, PodCIDRs: []string{c.PodCIDR}},
	}
	_, err := c.Client().CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s in cluster %s: %w", c.NodeName, c.Name, err)
	}
	return nil
}

// nodeSchedulable reports nil once the fake node is Ready without taints and the default
// ServiceAccount exists, so a Deployment applied now gets its pods scheduled and running. A
// light member has no ServiceAccount controller and no scheduler: its node being Ready and
// untainted is all there is to wait for.
func (c *Cluster) nodeSchedulable(ctx context.Context) error {
	node, err := c.Client().CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return fmt.Errorf("node %s is not Ready", c.NodeName)
	}
	if len(node.Spec.Taints) > 0 {
		return fmt.Errorf("node %s still has taints %v", c.NodeName, node.Spec.Taints)
	}
	if c.Light {
		return nil
	}
	if _, err := c.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("default ServiceAccount: %w", err)
	}
	return nil
}

// ServingTLS serves with the API server's own certificate (valid for 127.0.0.1, signed by the
// cluster's CA): a test server in front of the API server that its clients trust as they
// trust the API server.
func (c *Cluster) ServingTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(c.file("apiserver.crt"), c.file("apiserver.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
