package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// workerCommand is the worker binary with the environment's settings, the Temporal namespace
// given and a metrics address of its own, then args (e.g. "bootstrap" goes first).
func workerCommand(t *testing.T, ctx context.Context, namespace string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	metrics, err := service.FreeAddress()
	require.NoError(t, err)
	args = append(append(args, testEnv.Temporal.ServiceFlags()...),
		"--temporal-namespace", namespace, // the last one counts
		"--karmada-kubeconfig", testEnv.ControlPlane.Kubeconfig, "--host-kubeconfig", testEnv.Host.Kubeconfig,
		"--metrics-bind-address", metrics, "--log-format", "console")
	return exec.CommandContext(ctx, svc.Binary("worker"), args...), metrics
}

// runWorker runs the worker binary to its end (at most a minute) and returns its output.
func runWorker(t *testing.T, namespace string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, _ := workerCommand(t, ctx, namespace, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// expectWorkerReady runs the worker against namespace until its /readyz answers 200.
func expectWorkerReady(t *testing.T, namespace string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, metrics := workerCommand(t, ctx, namespace)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()
	eventually(t, time.Minute, func() error {
		resp, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s\n%s", resp.Status, out.String())
		}
		return nil
	})
}

// TestWorkerNamesWhatTemporalLacksAndBootstrapRegistersIt: against a namespace that does not
// exist, and one without the project's search attributes, the worker exits at start with one
// message naming what is missing and how to register it; `worker bootstrap` registers both,
// idempotently, after which the worker becomes ready.
func TestWorkerNamesWhatTemporalLacksAndBootstrapRegistersIt(t *testing.T) {
	suffix := fmt.Sprint(time.Now().UnixNano())
	missing, bare := "kf-missing-"+suffix, "kf-bare-"+suffix
	c := dialTemporal(t)
	ctx := context.Background()

	out, err := runWorker(t, missing)
	require.Error(t, err, "the worker must exit\n%s", out)
	assert.Contains(t, out, fmt.Sprintf(`%s\" does not exist on Temporal at %s: register it with `+"`worker bootstrap`", missing, testEnv.Temporal.Address))

	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: bare, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	eventually(t, time.Minute, func() error {
		out, err = runWorker(t, bare)
		if !strings.Contains(out, "search attributes KarmadaCluster, KarmadaKind, KarmadaName, KarmadaNamespace, ReconcilePhase are not registered in namespace") {
			return fmt.Errorf("worker (exit %v) did not name the missing search attributes:\n%s", err, out)
		}
		return nil
	})

	for _, namespace := range []string{missing, bare} {
		for run := 1; run <= 2; run++ { // the second run finds everything registered
			out, err := runWorker(t, namespace, "bootstrap")
			require.NoError(t, err, "bootstrap %s, run %d:\n%s", namespace, run, out)
			if run == 2 {
				assert.Contains(t, out, "namespace exists")
				assert.Contains(t, out, "search attributes registered")
			}
		}
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		require.NoError(t, err)
		for _, name := range searchattr.Names() {
			assert.Contains(t, resp.GetCustomAttributes(), name, "namespace %s", namespace)
		}
		expectWorkerReady(t, namespace)
	}
}

// TestWorkerWithoutClientCertificateNamesTLS: against the Temporal server with mTLS (make
// e2e-temporal-server), a worker that trusts the server but has no client certificate exits at
// once, naming TLS as the problem.
func TestWorkerWithoutClientCertificateNamesTLS(t *testing.T) {
	if testEnv.Temporal.CAFile == "" {
		t.Skip("the dev server speaks no TLS; make e2e-temporal-server runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, _ := workerCommand(t, ctx, testEnv.Temporal.Namespace)
	cmd.Args = append(cmd.Args, "--temporal-tls-cert-file=", "--temporal-tls-key-file=") // the last ones count
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the worker must exit\n%s", out)
	assert.Contains(t, string(out), "TLS with Temporal at "+testEnv.Temporal.Address+" failed (check the --temporal-tls-* flags)")
}
