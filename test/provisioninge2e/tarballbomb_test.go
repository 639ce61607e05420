package provisioninge2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// bombSize is what the gzip bomb unpacks to: 16 times the tarball reader's bound of
// decompressed bytes, from about a quarter of a MiB on the wire.
const bombSize = 256 << 20

// TestGzipBombTarballIsRefused: a Karmada whose spec.crdTarball serves a gzip bomb (a small
// download that unpacks to 256 MiB) fails its install with a message naming the bound, while
// each worker stays the same process and its peak memory grows by far less than the bomb.
func TestGzipBombTarballIsRefused(t *testing.T) {
	bomb := gzipBomb(t, bombSize)
	t.Logf("gzip bomb: %d KiB on the wire, %d MiB unpacked", len(bomb)>>10, bombSize>>20)
	tarballs := serveTarballs(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(bomb) })

	workers := []string{"worker", "worker-2"} // either may run the install
	pids, before := map[string]int{}, map[string]int64{}
	for _, w := range workers {
		pids[w] = svc.PID(w)
		require.NotZero(t, pids[w], "%s runs", w)
		var err error
		before[w], err = service.PeakMemory(pids[w])
		require.NoError(t, err)
	}
	ns := hostNamespace(t, "tenant-bomb")
	const name = "bomb"
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{
			CRDTarball: &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: tarballs + "crds.tar.gz"}},
			Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}},
		},
	})
	// The test is the kubelet of the API server pod, as in TestNodePortInstall: the CRDs are
	// installed once that API server answers.
	ctx := context.Background()
	var nodePort int32
	eventually(t, 2*time.Minute, func() error {
		service, err := testEnv.Host.Client().CoreV1().Services(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
		if err == nil && (len(service.Spec.Ports) == 0 || service.Spec.Ports[0].NodePort == 0) {
			err = fmt.Errorf("Service %s has no node port yet", service.Name)
		}
		if err == nil {
			nodePort = service.Spec.Ports[0].NodePort
		}
		return err
	})
	server, err := apiserverpod.Start(ctx, testEnv, ns, name, nodePort)
	require.NoError(t, err)
	defer server.Stop()
	eventually(t, 5*time.Minute, func() error {
		k, _, err := getKarmada(ns, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != operatorv1alpha1.ReasonFailed ||
			!strings.Contains(c.Message, "CRD tarball decompressed: more than") {
			return fmt.Errorf("Ready is %+v, want False/Failed for the tarball's decompressed size", c)
		}
		return nil
	})
	for _, w := range workers {
		assert.Equal(t, pids[w], svc.PID(w), "%s is the same process", w)
		peak, err := service.PeakMemory(pids[w])
		require.NoError(t, err)
		grown := peak - before[w]
		t.Logf("%s's peak memory grew by %d MiB", w, grown>>20)
		assert.Less(t, grown, int64(bombSize/4), "%s's peak memory grew by %d MiB", w, grown>>20)
	}
	deleteKarmada(t, ns, name)
}

// gzipBomb is a gzipped tarball of CRD files of zero bytes that unpack to size in all, each
// within the reader's bound of one file (4 MiB), so that the bound of all decompressed bytes
// is the one that refuses it.
func gzipBomb(t *testing.T, size int64) []byte {
	t.Helper()
	const fileSize = 4 << 20
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	tw := tar.NewWriter(gz)
	for i := int64(0); i < size/fileSize; i++ {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("crds/bases/bomb-%d.yaml", i), Mode: 0o644, Size: fileSize, Typeflag: tar.TypeReg}))
		_, err = io.CopyN(tw, zeros{}, fileSize)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
