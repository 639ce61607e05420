package proxye2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// podList is what the tests read of a list of pods.
type podList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name        string            `json:"name"`
			Namespace   string            `json:"namespace"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"items"`
}

// clustersByName maps "namespace/name" to the clusters a list says it came from.
func (l podList) clustersByName() map[string][]string {
	out := map[string][]string{}
	for _, it := range l.Items {
		key := it.Metadata.Namespace + "/" + it.Metadata.Name
		out[key] = append(out[key], it.Metadata.Annotations[proxy.AnnotationCachedFrom])
	}
	return out
}

func listPods(t *testing.T, caller string, args ...string) podList {
	t.Helper()
	out, err := kubectlAs(caller, append([]string{"get", "pods", "-o", "json"}, args...)...)
	require.NoError(t, err, out)
	var l podList
	require.NoError(t, json.Unmarshal([]byte(stdoutJSON(out)), &l), out)
	return l
}

// stdoutJSON drops warning lines kubectl prints before the JSON document.
func stdoutJSON(out string) string {
	if i := strings.Index(out, "{"); i >= 0 {
		return out[i:]
	}
	return out
}

func TestListAcrossMembersCarriesTheCluster(t *testing.T) {
	l := listPods(t, "alice", "-A")
	got := l.clustersByName()
	assert.Equal(t, []string{"member1"}, got["default/web-1"])
	assert.Equal(t, []string{"member2"}, got["default/web-2"])
	assert.Equal(t, []string{"member1", "member2"}, got["default/same"], "the same name in two clusters: both listed")

	// kubectl wraps what it got in a List of its own: read the proxy's list raw.
	out, err := kubectlAs("alice", "get", "--raw", "/api/v1/pods")
	require.NoError(t, err, out)
	var raw podList
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	assert.Equal(t, got, raw.clustersByName())
	versions, err := proxy.DecodeResourceVersion(raw.Metadata.ResourceVersion)
	require.NoError(t, err)
	assert.Len(t, versions, 2)
	assert.NotEmpty(t, versions["member1"])
	assert.NotEmpty(t, versions["member2"])
}

func TestGetOfOneNameInTwoClustersConflicts(t *testing.T) {
	out, err := kubectlAs("alice", "get", "pod", "same")
	require.Error(t, err)
	assert.Contains(t, out, "Conflict")
	assert.Contains(t, out, "member1, member2")

	out, err = kubectlAs("alice", "get", "pod", "web-2", "-o", "json")
	require.NoError(t, err, out)
	assert.Contains(t, out, `"`+proxy.AnnotationCachedFrom+`": "member2"`)
}

func TestTableLooksAsDirectly(t *testing.T) {
	through, err := kubectlAs("alice", "get", "pods", "-n", "default")
	require.NoError(t, err, through)
	directly, err := direct(testEnv.Member("member1").Kubeconfig, "get", "pods", "-n", "default")
	require.NoError(t, err, directly)
	assert.Equal(t, strings.Fields(firstLine(directly)), strings.Fields(firstLine(through)))
	assert.Contains(t, through, "web-1")
	assert.Contains(t, through, "web-2")
	assert.Contains(t, through, "Running")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestCreatesGoToTheControlPlaneOrAreRefused(t *testing.T) {
	// Deployments are not registered: created in the control plane, as alice.
	out, err := kubectlAs("alice", "create", "deployment", "made-through-proxy", "--image=app:test")
	require.NoError(t, err, out)
	_, err = testEnv.ControlPlane.Client().AppsV1().Deployments("default").Get(context.Background(), "made-through-proxy", metav1.GetOptions{})
	require.NoError(t, err)

	// Pods are registered: the proxy cannot know which cluster to create in.
	out, err = kubectlAs("alice", "run", "new-pod", "--image=app:test")
	require.Error(t, err)
	assert.Contains(t, out, "MethodNotAllowed")
}

func TestSelectorsAndPaging(t *testing.T) {
	got := listPods(t, "alice", "-A", "-l", "pod=web-2").clustersByName()
	assert.Equal(t, map[string][]string{"default/web-2": {"member2"}}, got)
	got = listPods(t, "alice", "-A", "--field-selector", "metadata.name=web-1").clustersByName()
	assert.Equal(t, map[string][]string{"default/web-1": {"member1"}}, got)

	whole := listPods(t, "alice", "-A")
	paged := listPods(t, "alice", "-A", "--chunk-size=1")
	assert.Equal(t, whole.clustersByName(), paged.clustersByName())
	assert.GreaterOrEqual(t, len(paged.Items), 6)
}

func TestIdentityIsTheCallers(t *testing.T) {
	// eve may not use the proxy at all.
	out, err := kubectlAs("eve", "get", "pods", "-A")
	require.Error(t, err)
	assert.Contains(t, out, "Forbidden")
	assert.Contains(t, out, "proxying/proxy")

	// bob may use it, but sees only what the members let him see: bob-ns in member1.
	out, err = kubectlAs("bob", "get", "pods", "-A")
	require.Error(t, err, out)
	assert.Contains(t, out, "Forbidden")
	got := listPods(t, "bob", "-n", bobNamespace).clustersByName()
	assert.Equal(t, map[string][]string{bobNamespace + "/bob-pod-1": {"member1"}}, got)
	got = listPods(t, "alice", "-n", bobNamespace).clustersByName()
	assert.Equal(t, map[string][]string{bobNamespace + "/bob-pod-1": {"member1"}, bobNamespace + "/bob-pod-2": {"member2"}}, got)

	// Control-plane requests are made as bob, who may not create there.
	out, err = kubectlAs("bob", "create", "deployment", "bob-deployment", "--image=app:test")
	require.Error(t, err)
	assert.Contains(t, out, `User "system:serviceaccount:proxy-e2e:bob" cannot create resource "deployments"`)
}

// client is an HTTP client that trusts the proxy.
func client(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(proxyCA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func request(t *testing.T, c *http.Client, caller, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, proxyURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokens[caller])
	resp, err := c.Do(req)
	require.NoError(t, err)
	return resp
}

func TestBadInputGetsAStatus(t *testing.T) {
	c := client(t)
	for _, tc := range []struct {
		path string
		code int
		text string
	}{
		{"/api/v1/pods?resourceVersion=garbage", http.StatusBadRequest, "not returned by this proxy"},
		{"/api/v1/pods?watch=true&resourceVersion=12345", http.StatusBadRequest, "not returned by this proxy"},
		{"/api/v1/pods?continue=garbage&limit=1", http.StatusBadRequest, "continue token"},
		{"/api/v1/pods?limit=-1", http.StatusBadRequest, "limit"},
		{"/api/v1/pods?labelSelector=a%20in%20((", http.StatusBadRequest, ""},
		{"/api/v1/namespaces/default/pods/nowhere", http.StatusNotFound, "not found"},
		{"/api/v1/foos", http.StatusForbidden, "foos"}, // unknown: the control plane answers, to alice
		{"/api/v1//pods", http.StatusNotFound, "empty"},
	} {
		resp := request(t, c, "alice", tc.path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode, "%s: %s", tc.path, body)
		var status metav1.Status
		require.NoError(t, json.Unmarshal(body, &status), "%s: %s", tc.path, body)
		assert.Equal(t, "Status", status.Kind, tc.path)
		assert.Contains(t, status.Message, tc.text, tc.path)
	}
	// Outside the proxy path: a clean 404.
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(proxyURL, "/proxy"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokens["alice"])
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// watchEvent is what the tests read of a watch event.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

// watchUntil watches pods in default from rv and returns the first event for name, and the
// events seen until then.
func watchUntil(t *testing.T, rv, name string, during func()) (watchEvent, []string) {
	t.Helper()
	resp := openWatch(t, "/api/v1/namespaces/default/pods?watch=true&resourceVersion="+rv)
	defer resp.Body.Close()
	if during != nil {
		during()
	}
	dec := json.NewDecoder(resp.Body)
	var seen []string
	for {
		var e watchEvent
		require.NoError(t, dec.Decode(&e), "events seen: %v", seen)
		seen = append(seen, e.Type+" "+e.Object.Metadata.Name)
		if e.Object.Metadata.Name == name {
			return e, seen
		}
	}
}

func TestWatchSeesOtherMembersAndResumes(t *testing.T) {
	out, err := kubectlAs("alice", "get", "--raw", "/api/v1/namespaces/default/pods")
	require.NoError(t, err, out)
	var l podList
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	added, _ := watchUntil(t, l.Metadata.ResourceVersion, "watched-2", func() {
		require.NoError(t, createPod(context.Background(), testEnv.Member("member2").Client(), "default", "watched-2"))
	})
	assert.Equal(t, "ADDED", added.Type)
	assert.Equal(t, "member2", added.Object.Metadata.Annotations[proxy.AnnotationCachedFrom])
	versions, err := proxy.DecodeResourceVersion(added.Object.Metadata.ResourceVersion)
	require.NoError(t, err)
	assert.Len(t, versions, 2, "the event's version covers every cluster")

	// A pod created while nobody watches is seen by a watch resumed from the event's version,
	// and what was seen before is not delivered again.
	require.NoError(t, createPod(context.Background(), testEnv.Member("member1").Client(), "default", "watched-1"))
	resumed, seen := watchUntil(t, added.Object.Metadata.ResourceVersion, "watched-1", nil)
	assert.Equal(t, "ADDED", resumed.Type)
	assert.Equal(t, "member1", resumed.Object.Metadata.Annotations[proxy.AnnotationCachedFrom])
	assert.False(t, slices.Contains(seen, "ADDED watched-2"), "delivered again: %v", seen)
	assert.False(t, slices.Contains(seen, "ADDED web-1"), "delivered again: %v", seen)
}

func TestNonResourcePathsReachTheControlPlane(t *testing.T) {
	out, err := kubectlAs("alice", "get", "--raw", "/version")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gitVersion")
	out, err = kubectlAs("alice", "api-resources")
	require.NoError(t, err, out)
	assert.Contains(t, out, "resourceregistries")
}

// openWatch starts a watch through the proxy as alice; it ends after 30 s at the latest.
func openWatch(t *testing.T, path string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxyURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokens["alice"])
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}
