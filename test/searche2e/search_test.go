package searche2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/karmadaflow/karmadaflow/internal/pki"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// TestQuickStartWorksVerbatim follows the seed's quick start: the control plane's kubeconfig
// with the proxy path appended. The aggregator passes each caller to the worker in its
// front-proxy headers, and the worker acts as that caller in the member and the control plane.
func TestQuickStartWorksVerbatim(t *testing.T) {
	member1 := testEnv.Member("member1")
	through, err := kubectlWith(quickStart["alice"], "get", "pods", "-o", "name")
	require.NoError(t, err, through)
	directly, err := kubectlWith(member1.Kubeconfig, "get", "pods", "-n", "default", "-o", "name")
	require.NoError(t, err, directly)
	assert.Equal(t, directly, through)
	assert.Contains(t, through, "pod/web-1")

	for _, websockets := range []string{"true", "false"} {
		t.Run("exec websockets="+websockets, func(t *testing.T) {
			cmd := exec.Command(kubectl, "--kubeconfig", quickStart["alice"], "exec", "web-1", "--", "sh", "-c", "pwd")
			cmd.Env = append(os.Environ(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS="+websockets)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Equal(t, member1.ExecDir()+"\n", string(out), "the command ran in member1's pod")
		})
	}

	// Namespaces are the control plane's: alice asks it as herself, and may not list them.
	out, err := kubectlWith(quickStart["alice"], "get", "namespaces")
	require.Error(t, err)
	assert.Contains(t, out, `User "`+user("alice")+`" cannot list resource "namespaces"`)

	// bob may use the proxy, but member1 lets him see nothing.
	out, err = kubectlWith(quickStart["bob"], "get", "pods")
	require.Error(t, err)
	assert.Contains(t, out, `User "`+user("bob")+`" cannot list resource "pods"`)

	// eve may not use the proxy at all.
	out, err = kubectlWith(quickStart["eve"], "get", "pods")
	require.Error(t, err)
	assert.Contains(t, out, `User "`+user("eve")+`" cannot get resource "proxying/proxy" in API group "search.karmada.io"`)
}

// TestResourceRegistriesAreServedByTheWorker: with the search API there is no CRD; the
// aggregator passes ResourceRegistries to the worker, which validates them by the CRD's
// schema and keeps them in etcd where karmada-search keeps them.
func TestResourceRegistriesAreServedByTheWorker(t *testing.T) {
	ctx := context.Background()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err := testEnv.ControlPlane.Dynamic().Resource(crds).Get(ctx, "resourceregistries.search.karmada.io", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no ResourceRegistry CRD: %v", err)

	admin := testEnv.ControlPlane.Kubeconfig
	out, err := kubectlWith(admin, "get", "resourceregistries", "-o", "jsonpath={.items[*].spec.resourceSelectors[*].kind}")
	require.NoError(t, err, out)
	assert.Equal(t, "Pod", out)

	invalid := filepath.Join(t.TempDir(), "invalid.yaml")
	require.NoError(t, os.WriteFile(invalid, []byte(`apiVersion: search.karmada.io/v1alpha1
kind: ResourceRegistry
metadata: {name: invalid}
spec:
  targetCluster: {}
  resourceSelectors:
  - apiVersion: v1
`), 0o600))
	out, err = kubectlWith(admin, "create", "-f", invalid)
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.resourceSelectors[0].kind: Required value")

	valid := filepath.Join(t.TempDir(), "nodes.yaml")
	require.NoError(t, os.WriteFile(valid, []byte(`apiVersion: search.karmada.io/v1alpha1
kind: ResourceRegistry
metadata: {name: nodes}
spec:
  targetCluster: {clusterNames: [member1]}
  resourceSelectors:
  - {apiVersion: v1, kind: Node}
`), 0o600))
	out, err = kubectlWith(admin, "apply", "--server-side", "-f", valid)
	require.NoError(t, err, out)
	assert.Equal(t, 1, etcdKeys(t, "/"+env.ControlPlaneName+"/search.karmada.io/resourceregistries/nodes"))
	out, err = kubectlWith(admin, "delete", "resourceregistry", "nodes")
	require.NoError(t, err, out)
	assert.Equal(t, 0, etcdKeys(t, "/"+env.ControlPlaneName+"/search.karmada.io/resourceregistries/nodes"))
}

// etcdKeys counts the keys named key in the environment's etcd, with its JSON gateway.
func etcdKeys(t *testing.T, key string) int {
	t.Helper()
	body, err := json.Marshal(map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key)), "count_only": true})
	require.NoError(t, err)
	resp, err := http.Post(testEnv.EtcdURL()+"/v3/kv/range", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct {
		Count string `json:"count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	if answer.Count == "" { // the gateway leaves out a zero
		return 0
	}
	n, err := strconv.Atoi(answer.Count)
	require.NoError(t, err)
	return n
}

// TestDirectURLKeepsWorking: the worker's own URL serves the proxy too, to callers with a
// token, authorized as through the aggregator.
func TestDirectURLKeepsWorking(t *testing.T) {
	out, err := kubectlWith(directURL["alice"], "get", "pods", "-o", "name")
	require.NoError(t, err, out)
	assert.Equal(t, "pod/web-1\n", out)
	out, err = kubectlWith(directURL["eve"], "get", "pods")
	require.Error(t, err)
	assert.Contains(t, out, `User "`+user("eve")+`" cannot get resource "proxying/proxy"`)
}

// TestFrontProxyHeadersNeedTheAggregatorsCertificate: the worker believes X-Remote-User only
// from a client certificate of the control plane's front-proxy CA, with an allowed name.
func TestFrontProxyHeadersNeedTheAggregatorsCertificate(t *testing.T) {
	ca, err := os.ReadFile(proxyCA)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca))

	impostor, err := pki.NewAuthority("front-proxy-ca")
	require.NoError(t, err)
	pair, err := impostor.Issue(pki.LeafSpec{CommonName: "front-proxy-client", Client: true}, pki.DefaultLeafValidity)
	require.NoError(t, err)
	forged, err := tls.X509KeyPair(pair.Cert, pair.Key)
	require.NoError(t, err)

	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another CA's certificate": {forged}} {
		t.Run(name, func(t *testing.T) {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
			req, err := http.NewRequest(http.MethodGet, proxy+"/api/v1/namespaces/default/pods", nil)
			require.NoError(t, err)
			req.Header.Set("X-Remote-User", user("alice"))
			req.Header.Set("X-Remote-Group", "system:masters")
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, string(body))
			assert.NotContains(t, string(body), "web-1")
			assert.False(t, strings.Contains(string(body), user("alice")), "the forged user was believed: %s", body)
		})
	}
}
