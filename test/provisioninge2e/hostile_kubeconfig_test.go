package provisioninge2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// A tenant writes Secrets in its own namespace, and so the kubeconfigs the worker could read
// there: the remote host cluster's (spec.hostCluster.secretRef) and the admin kubeconfig the
// worker writes (<name>-karmada-admin-config). Neither may make the worker run a command or
// send a file of its own anywhere.

// tenantListener is an HTTPS server on loopback, standing for a server the tenant runs: it
// counts every connection and records every request. HTTPS, because client-go sends no
// credentials over plain http: an http listener would see nothing for the wrong reason.
type tenantListener struct {
	server      *httptest.Server
	mu          sync.Mutex
	connections int
	requests    []string
}

func listenAsTenant(t *testing.T) *tenantListener {
	t.Helper()
	l := &tenantListener{}
	l.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.requests = append(l.requests, r.Method+" "+r.URL.Path+" Authorization: "+r.Header.Get("Authorization"))
		l.mu.Unlock()
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	l.server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			l.mu.Lock()
			l.connections++
			l.mu.Unlock()
		}
	}
	l.server.StartTLS()
	t.Cleanup(l.server.Close)
	return l
}

// cluster is the kubeconfig cluster of the listener, its certificate trusted: nothing but the
// kubeconfig's user would stop a request.
func (l *tenantListener) cluster() *clientcmdapi.Cluster {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.server.Certificate().Raw})
	return &clientcmdapi.Cluster{Server: l.server.URL, CertificateAuthorityData: ca}
}

func (l *tenantListener) seen() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connections, append([]string(nil), l.requests...)
}

// tenantKubeconfig is a kubeconfig with one context, of cluster and user "tenant".
func tenantKubeconfig(t *testing.T, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["tenant"] = cluster
	cfg.AuthInfos["tenant"] = user
	cfg.Contexts["tenant"] = &clientcmdapi.Context{Cluster: "tenant", AuthInfo: "tenant"}
	cfg.CurrentContext = "tenant"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

// execUser runs /bin/sh to create marker.
func execUser(marker string) *clientcmdapi.AuthInfo {
	return &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
		Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
}

// checkNothingHappened asserts, when the test ends, that marker was never created and that
// the listener got no connection.
func checkNothingHappened(t *testing.T, marker string, l *tenantListener) {
	t.Cleanup(func() {
		assert.NoFileExists(t, marker, "the worker ran the tenant's exec plugin")
		connections, requests := l.seen()
		assert.Zero(t, connections, "the tenant's listener was connected to; requests: %q", requests)
	})
}

func putSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	secrets := testEnv.Host.Client().CoreV1().Secrets(ns)
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	secret.Data = data
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestHostClusterKubeconfigRunsNothing: a remote host cluster's kubeconfig whose user is an
// exec plugin, or a tokenFile naming a file the worker can read (with the server an HTTPS
// listener of the tenant's, its certificate trusted), is refused: Ready=False/ValidationError
// names the Secret, the field and why, the command never runs, the listener is never
// connected to, and nothing retries. Once the Secret holds inline credentials, a resync
// installs.
func TestHostClusterKubeconfigRunsNothing(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-hostile")
	listener := listenAsTenant(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	workerFile := filepath.Join(dir, "worker-secret")
	require.NoError(t, os.WriteFile(workerFile, []byte("a secret of the worker's"), 0o600))
	checkNothingHappened(t, marker, listener)

	cases := []struct {
		name, field, why string
		user             *clientcmdapi.AuthInfo
	}{
		{"hostile-exec", `users["tenant"].exec`, "would run a command in the worker", execUser(marker)},
		{"hostile-token-file", `users["tenant"].tokenFile`, "would read a file of the worker's", &clientcmdapi.AuthInfo{TokenFile: workerFile}},
	}
	for _, c := range cases {
		putSecret(t, ns, c.name, map[string][]byte{prov.KeyKubeconfig: tenantKubeconfig(t, listener.cluster(), c.user)})
		createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: operatorv1alpha1.KarmadaSpec{
			HostCluster: &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: c.name}},
			Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{
				ServiceType: corev1.ServiceTypeNodePort}},
		}})
	}
	for _, c := range cases {
		// The Secret was read for this generation: the condition says what it refused.
		cond := waitValidationError(t, ns, c.name, "spec.hostCluster.secretRef")
		assert.Contains(t, cond.Message, "Secret "+ns+"/"+c.name, c.name)
		assert.Contains(t, cond.Message, c.field, c.name)
		assert.Contains(t, cond.Message, c.why, c.name)
		t.Logf("%s: %s", c.name, cond.Message)
	}

	// No retry: a while later each workflow has still read its object once.
	time.Sleep(5 * time.Second)
	for _, c := range cases {
		counts, _ := scheduled(history(t, wf.WorkflowID(ns, c.name)))
		assert.Equal(t, map[string]int{"ValidateKarmada": 1, "WriteKarmadaStatus": 1}, counts, c.name)
	}

	// Inline credentials (member1's kubeconfig: a token and the CA's data) are accepted on the
	// next pass: the instance installs into member1.
	member1, err := os.ReadFile(testEnv.Member("member1").Kubeconfig)
	require.NoError(t, err)
	putSecret(t, ns, "hostile-exec", map[string][]byte{prov.KeyKubeconfig: member1})
	require.NoError(t, temporal.SignalWorkflow(ctx, wf.WorkflowID(ns, "hostile-exec"), "", wf.SignalResync, nil))
	eventually(t, time.Minute, func() error {
		counts, _ := scheduled(history(t, wf.WorkflowID(ns, "hostile-exec")))
		if counts[prov.StepGenerateCertificates] == 0 {
			return fmt.Errorf("not installing after the fix: %v", counts)
		}
		return nil
	})
	for _, c := range cases {
		deleteKarmada(t, ns, c.name)
	}
}

// TestAdminKubeconfigIsOutputOnly: a tenant who overwrites the admin kubeconfig Secret the
// worker wrote, with one whose user is an exec plugin and whose server is the tenant's
// listener, changes nothing the worker does: the worker reaches the instance's API server
// with the endpoint it computes and the certificates of the instance's cert Secret, and
// InitControlPlane installs into it; the command never runs and the listener is never
// connected to.
func TestAdminKubeconfigIsOutputOnly(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-hostile")
	const name = "admin-overwritten"
	id := wf.WorkflowID(ns, name)
	listener := listenAsTenant(t)
	marker := filepath.Join(t.TempDir(), "ran")
	checkNothingHappened(t, marker, listener)
	createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: operatorv1alpha1.KarmadaSpec{
		Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}},
	}})

	// The admin kubeconfig is written; InitControlPlane, which needs the control plane, fails
	// and retries until the test starts the API server.
	eventually(t, 2*time.Minute, func() error {
		h, err := tryHistory(id)
		if err != nil {
			return err
		}
		_, completed := scheduled(h)
		if completed[prov.StepWaitAggregatedAPIServerReady] == 0 {
			return fmt.Errorf("completed so far: %v", completed)
		}
		return nil
	})
	adminConfig := prov.NamesFor(name).Of(prov.SuffixAdminConfig)
	secret, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, adminConfig, metav1.GetOptions{})
	require.NoError(t, err)
	written := secret.Data[prov.KeyKubeconfig]
	secret.Data[prov.KeyKubeconfig] = tenantKubeconfig(t, listener.cluster(), execUser(marker))
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	require.NoError(t, err)

	service, err := testEnv.Host.Client().CoreV1().Services(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
	require.NoError(t, err)
	server, err := apiserverpod.Start(ctx, testEnv, ns, name, service.Spec.Ports[0].NodePort)
	require.NoError(t, err)
	defer server.Stop()
	eventually(t, 3*time.Minute, func() error {
		_, completed := scheduled(history(t, id))
		if completed[prov.StepInitControlPlane] == 0 {
			return fmt.Errorf("InitControlPlane not completed; state: %+v", stateOrError(ns, name))
		}
		return nil
	})

	// What InitControlPlane made is in the instance's API server, read with the kubeconfig the
	// worker wrote.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(written)
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "karmada-system", metav1.GetOptions{})
	assert.NoError(t, err, "karmada-system in the instance's API server")
	k, _, err := getKarmada(ns, name)
	require.NoError(t, err)
	if c := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady); c != nil {
		t.Logf("Ready: %s %s: %s", c.Status, c.Reason, c.Message)
	}
	deleteKarmada(t, ns, name)
}

func stateOrError(ns, name string) any {
	s, err := state(ns, name)
	if err != nil {
		return err
	}
	return s
}
