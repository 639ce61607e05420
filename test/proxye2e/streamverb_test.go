package proxye2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestExecNeedsCreate: exec reaches a pod only for a caller allowed create, over WebSocket (a
// GET) as over SPDY (a POST), as kube-apiserver authorizes it: on the proxy (proxying/proxy),
// the reader, allowed only get there, is refused 403 by the proxy before any member is asked,
// while reading through it; in the member (pods/exec), the peeker, allowed only get there, is
// refused by the member. Before, the proxy let the reader exec over WebSocket.
func TestExecNeedsCreate(t *testing.T) {
	bindMemberRole(t, "pod-exec-get", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}})
	reader := newCaller(t, "reader", []string{"get"}, "view", "pod-debugger")
	peeker := newCaller(t, "peeker", []string{"get", "create"}, "view", "pod-exec-get")
	member1 := testEnv.Member("member1")

	out, code := runKubectl(t, reader, nil, "get", "pod", "web-1", "-o", "name")
	require.Equal(t, 0, code, "the reader reads through the proxy: %s", out)
	for _, websockets := range []string{"true", "false"} {
		env := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + websockets}
		out, code := runKubectl(t, reader, env, "exec", "web-1", "--", "pwd")
		assert.NotEqual(t, 0, code, "websockets=%s: %s", websockets, out)
		assert.Contains(t, out, `"system:serviceaccount:proxy-e2e:reader" cannot create resource "proxying/proxy" in API group "search.karmada.io"`, "websockets=%s", websockets)
		assert.NotContains(t, out, member1.ExecDir(), "websockets=%s", websockets)

		out, code = runKubectl(t, peeker, env, "exec", "web-1", "--", "pwd")
		assert.NotEqual(t, 0, code, "websockets=%s: %s", websockets, out)
		assert.Contains(t, out, `User "system:serviceaccount:proxy-e2e:peeker" cannot create resource "pods/exec"`, "websockets=%s", websockets)
		assert.NotContains(t, out, member1.ExecDir(), "websockets=%s", websockets)
	}
	// alice, allowed create on both, runs it (TestExecOverWebSocketAndSPDY compares the output).
	out, code = runKubectl(t, kubeconfigs["alice"], []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true"}, "exec", "web-1", "--", "pwd")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, member1.ExecDir())
}
