package options

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"
)

// writeFiles writes name -> content into a temporary directory and returns name -> path.
func writeFiles(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for name, content := range files {
		paths[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(paths[name], content, 0o600))
	}
	return paths
}

func TestPlainTemporalConnectionByDefault(t *testing.T) {
	o, err := Parse(Worker, nil, env(nil))
	require.NoError(t, err)
	opts, err := o.TemporalClientOptions(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, opts.ConnectionOptions.TLS)
	assert.Nil(t, opts.Credentials)
}

func TestMutualTLSWithTemporal(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("karmadaflow-worker", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	files := writeFiles(t, map[string][]byte{"ca.crt": certPEM, "tls.crt": certPEM, "tls.key": keyPEM})

	o, err := Parse(Worker, nil, env(map[string]string{
		"KARMADAFLOW_TEMPORAL_ADDRESS":       "temporal.example:7233",
		"KARMADAFLOW_TEMPORAL_TLS_CA_FILE":   files["ca.crt"],
		"KARMADAFLOW_TEMPORAL_TLS_CERT_FILE": files["tls.crt"],
		"KARMADAFLOW_TEMPORAL_TLS_KEY_FILE":  files["tls.key"],
	}))
	require.NoError(t, err)
	opts, err := o.TemporalClientOptions(nil, nil)
	require.NoError(t, err)
	cfg := opts.ConnectionOptions.TLS
	require.NotNil(t, cfg)
	assert.Equal(t, "temporal.example", cfg.ServerName, "the address's host by default")
	require.NotNil(t, cfg.RootCAs)
	cert, err := cfg.GetClientCertificate(nil)
	require.NoError(t, err)
	assert.NotEmpty(t, cert.Certificate)

	o.TemporalTLSServerName = "frontend.temporal"
	opts, err = o.TemporalClientOptions(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "frontend.temporal", opts.ConnectionOptions.TLS.ServerName)
}

func TestTemporalAPIKeyIsReadAgainWhenItsFileChanges(t *testing.T) {
	files := writeFiles(t, map[string][]byte{"api-key": []byte("first\n")})
	o, err := Parse(Starter, []string{"--temporal-api-key-file", files["api-key"]}, env(nil))
	require.NoError(t, err)
	opts, err := o.TemporalClientOptions(nil, nil)
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS, "an API key implies TLS")
	require.NotNil(t, opts.Credentials)

	key := &fileValue{path: files["api-key"]}
	v, err := key.read()
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(v))
	require.NoError(t, os.WriteFile(files["api-key"], []byte("second, rotated\n"), 0o600))
	v, err = key.read()
	require.NoError(t, err)
	assert.Equal(t, "second, rotated\n", string(v))
}

func TestTemporalTLSProblemsAreNamed(t *testing.T) {
	files := writeFiles(t, map[string][]byte{"not-a-cert": []byte("hello"), "empty-key": nil})
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"cert without key": {[]string{"--temporal-tls-cert-file=/x"}, "--temporal-tls-cert-file and --temporal-tls-key-file go together"},
		"missing CA file":  {[]string{"--temporal-tls-ca-file=/nonexistent/ca.crt"}, "--temporal-tls-ca-file: open /nonexistent/ca.crt"},
		"CA file not PEM":  {[]string{"--temporal-tls-ca-file=" + files["not-a-cert"]}, "holds no PEM certificate"},
		"bad key pair":     {[]string{"--temporal-tls-cert-file=" + files["not-a-cert"], "--temporal-tls-key-file=" + files["not-a-cert"]}, "--temporal-tls-cert-file and --temporal-tls-key-file"},
		"empty API key":    {[]string{"--temporal-api-key-file=" + files["empty-key"]}, "is empty"},
		"missing API key":  {[]string{"--temporal-api-key-file=/nonexistent/key"}, "--temporal-api-key-file: stat /nonexistent/key"},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(Worker, tc.args, env(nil))
			if err == nil {
				_, err = o.TemporalClientOptions(nil, nil)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
