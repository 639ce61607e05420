package proxye2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// Each request through the proxy leaves one line in the worker's access log that names the
// caller, the clusters reached, the status and the duration.
func TestAccessLogNamesTheCaller(t *testing.T) {
	path := proxy.BasePath + "/api/v1/namespaces/" + bobNamespace + "/pods"
	resp := request(t, client(t), "bob", strings.TrimPrefix(path, proxy.BasePath))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	denied := request(t, client(t), "eve", "/api/v1/pods")
	denied.Body.Close()
	require.Equal(t, http.StatusForbidden, denied.StatusCode)

	log := filepath.Join(testEnv.Dir, "logs", "service-worker.log")
	for _, want := range []struct {
		user, path string
		rest       []string
	}{
		{user("bob"), path, []string{`"verb": "get"`, `"clusters": ["member1"`, `"status": 200`}},
		{user("eve"), proxy.BasePath + "/api/v1/pods", []string{`"status": 403`}},
	} {
		require.Eventually(t, func() bool {
			text, err := os.ReadFile(log)
			require.NoError(t, err)
			for _, line := range strings.Split(string(text), "\n") {
				if containsAll(line, append([]string{"proxy.access", fmt.Sprintf(`"user": %q`, want.user),
					fmt.Sprintf(`"path": %q`, want.path), `"groups": [`, `"duration": `}, want.rest...)) {
					return true
				}
			}
			return false
		}, 10*time.Second, 200*time.Millisecond, "no access-log line of %s for %s with %s in %s", want.user, want.path, want.rest, log)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
