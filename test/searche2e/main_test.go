// Package searche2e tests the global resource proxy served as the search.karmada.io API
// behind the control plane's aggregator, as karmada-search is: the real worker registered by
// the chart's APIService in a real kube-apiserver, ResourceRegistries kept in the real etcd,
// and the real kubectl with the control plane's kubeconfig and the proxy path appended.
package searche2e

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// The chart's names: the search API's Service in the control plane, in the chart's namespace.
const (
	searchService   = "karmadaflow-search"
	searchNamespace = "karmadaflow-system"
	apiServiceName  = "v1alpha1.search.karmada.io"
)

var (
	testEnv *env.Env
	svc     *service.Service
	kubectl string
	// proxy is the worker's own URL of the proxy (the direct mode's URL), and proxyCA the CA
	// of the certificate served there.
	proxy, proxyCA string
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := env.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectl = filepath.Join(root, "bin", "kubectl")
	crds, err := crdsWithoutResourceRegistry(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(crds)
	e, err := env.Start(ctx, env.Options{Members: 1, CRDDir: crds, Logf: log.Printf})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	testEnv = e

	address, err := service.FreeAddress()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	files, err := e.WriteProxyFiles(address, searchService+"."+searchNamespace+".svc")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proxy, proxyCA = files.URL, files.CAFile
	_, port, _ := net.SplitHostPort(address)
	chart := []string{"proxy.enabled=true", "proxy.tls.existingSecret=proxy-serving", "proxy.searchAPI.enabled=true", "proxy.searchAPI.etcd.servers=" + e.EtcdURL(),
		"file:proxy.searchAPI.caBundle=" + files.CAFile}
	// Of the two workers on the task queue, the first serves the search API.
	svc, err = service.Start(ctx, e, service.Options{
		Workers:    2,
		WorkerArgs: []string{"--enable-cluster-health=false"},
		FirstWorkerArgs: []string{
			"--enable-proxy", "--proxy-bind-address", address, "--proxy-tls-cert-file", files.CertFile, "--proxy-tls-key-file", files.KeyFile,
			"--serve-search-api", "--search-etcd-servers", e.EtcdURL(), "--search-etcd-prefix", "/" + env.ControlPlaneName,
		},
		StarterArgs: []string{"--enable-cluster-health=false"},
		ChartValues: chart,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer svc.Stop()
	// The chart's APIService and its Service, which sends the aggregator to the worker on
	// loopback, verified by the proxy's CA.
	registration := append([]string{"target=controlPlane", "proxy.searchAPI.externalName=localhost", "proxy.searchAPI.port=" + port}, chart...)
	if err := service.ApplyChartObjects(ctx, e.ControlPlane, registration, "Service", "APIService"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := waitForAvailable(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setUp(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "setting up:", err)
		return 1
	}
	return e.LoopbackCheckedExit(m.Run())
}

// crdsWithoutResourceRegistry is a copy of deploy/crds without the ResourceRegistry CRD, as
// the chart installs them with the search API: ResourceRegistries are the worker's.
func crdsWithoutResourceRegistry(root string) (string, error) {
	dir, err := os.MkdirTemp("", "searche2e-crds-")
	if err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "search.karmada.io_") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// waitForAvailable waits until the aggregator reports the APIService Available: it reached
// the worker, verified its certificate and read its discovery.
func waitForAvailable(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		obj, err := testEnv.ControlPlane.Dynamic().Resource(apiServices).Get(ctx, apiServiceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			if c, _ := c.(map[string]any); c["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", c["reason"], c["message"])
				return c["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s is not Available (%s): %w", apiServiceName, last, err)
	}
	return nil
}
