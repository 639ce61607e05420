package searche2e

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExecBehindTheAggregatorNeedsCreate: reader, allowed only get on proxying/proxy (and exec
// in member1), reads through the search API but execs in no pod, over WebSocket (a GET the API
// servers authorize as get, which the worker authorizes again as create) as over SPDY (a POST),
// through the aggregator and at the worker's own URL. Before, the WebSocket exec ran.
func TestExecBehindTheAggregatorNeedsCreate(t *testing.T) {
	member1 := testEnv.Member("member1")
	for name, kubeconfig := range map[string]string{"quick start": quickStart["reader"], "direct": directURL["reader"]} {
		out, err := kubectlWith(kubeconfig, "get", "pod", "web-1", "-o", "name")
		require.NoError(t, err, "%s: the reader reads: %s", name, out)
		for _, websockets := range []string{"true", "false"} {
			cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "exec", "web-1", "--", "sh", "-c", "pwd")
			cmd.Env = append(os.Environ(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS="+websockets)
			got, err := cmd.CombinedOutput()
			assert.Error(t, err, "%s websockets=%s: %s", name, websockets, got)
			assert.NotContains(t, string(got), member1.ExecDir(), "%s websockets=%s: the command ran", name, websockets)
			assert.Contains(t, string(got), `cannot create resource "proxying/proxy"`, "%s websockets=%s", name, websockets)
		}
	}
}
