package kubeconfig

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// write is a kubeconfig whose current context "ctx" joins cluster "c" and user "u".
func write(t *testing.T, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = cluster
	cfg.AuthInfos["u"] = user
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

func TestInlineCredentialsMakeTheConfig(t *testing.T) {
	data := write(t,
		&clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca"), TLSServerName: "api", DisableCompression: true},
		&clientcmdapi.AuthInfo{Token: "token", ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key"),
			Username: "user", Password: "password", Impersonate: "someone", ImpersonateGroups: []string{"g"}})
	cfg, err := InlineRESTConfig(data)
	require.NoError(t, err)
	assert.Equal(t, &rest.Config{
		Host:               "https://127.0.0.1:6443",
		TLSClientConfig:    rest.TLSClientConfig{ServerName: "api", CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")},
		DisableCompression: true,
		BearerToken:        "token",
		Username:           "user",
		Password:           "password",
		Impersonate:        rest.ImpersonationConfig{UserName: "someone", Groups: []string{"g"}},
	}, cfg)
}

func TestNoUserIsAnonymous(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", InsecureSkipTLSVerify: true}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	rc, err := InlineRESTConfig(data)
	require.NoError(t, err)
	assert.Equal(t, &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, rc)
}

func TestFieldsThatRunReadOrProxyAreRefused(t *testing.T) {
	server := "https://127.0.0.1:6443"
	cases := []struct {
		field, why string
		cluster    clientcmdapi.Cluster
		user       clientcmdapi.AuthInfo
	}{
		{`clusters["c"].certificate-authority`, readsFile, clientcmdapi.Cluster{Server: server, CertificateAuthority: "/etc/worker/ca.crt"}, clientcmdapi.AuthInfo{}},
		{`clusters["c"].proxy-url`, sendsThrough, clientcmdapi.Cluster{Server: server, ProxyURL: "http://127.0.0.1:3128"}, clientcmdapi.AuthInfo{}},
		{`users["u"].client-certificate`, readsFile, clientcmdapi.Cluster{Server: server}, clientcmdapi.AuthInfo{ClientCertificate: "/etc/worker/tls.crt"}},
		{`users["u"].client-key`, readsFile, clientcmdapi.Cluster{Server: server}, clientcmdapi.AuthInfo{ClientKey: "/etc/worker/tls.key"}},
		{`users["u"].tokenFile`, readsFile, clientcmdapi.Cluster{Server: server},
			clientcmdapi.AuthInfo{Token: "inline", TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}},
		{`users["u"].auth-provider`, runsPlugin, clientcmdapi.Cluster{Server: server},
			clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}},
		{`users["u"].exec`, runsCommand, clientcmdapi.Cluster{Server: server},
			clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: "Never"}}},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			_, err := InlineRESTConfig(write(t, &c.cluster, &c.user))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.field+": refused, it "+c.why)
			assert.Contains(t, err.Error(), "only inline credentials are accepted")
		})
	}
}

func TestEveryRefusedFieldIsNamed(t *testing.T) {
	_, err := InlineRESTConfig(write(t, &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", ProxyURL: "http://127.0.0.1:3128"},
		&clientcmdapi.AuthInfo{TokenFile: "/token", Exec: &clientcmdapi.ExecConfig{Command: "true", APIVersion: "client.authentication.k8s.io/v1beta1"}}))
	require.Error(t, err)
	assert.Equal(t, `clusters["c"].proxy-url: refused, it `+sendsThrough+`; users["u"].tokenFile: refused, it `+readsFile+
		`; users["u"].exec: refused, it `+runsCommand+`; `+onlyInlineAre, err.Error())
}

func TestIncompleteKubeconfigsAreRefused(t *testing.T) {
	noContext := clientcmdapi.NewConfig()
	noContext.CurrentContext = "gone"
	noCluster := clientcmdapi.NewConfig()
	noCluster.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c"}
	noCluster.CurrentContext = "ctx"
	noUser := clientcmdapi.NewConfig()
	noUser.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	noUser.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	noUser.CurrentContext = "ctx"
	noServer := clientcmdapi.NewConfig()
	noServer.Clusters["c"] = &clientcmdapi.Cluster{}
	noServer.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c"}
	noServer.CurrentContext = "ctx"
	encode := func(cfg *clientcmdapi.Config) []byte {
		data, err := clientcmd.Write(*cfg)
		require.NoError(t, err)
		return data
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":              {nil, "the kubeconfig is empty"},
		"not a kubeconfig":   {[]byte("{"), "the kubeconfig does not parse"},
		"no current-context": {encode(clientcmdapi.NewConfig()), "the kubeconfig has no current-context"},
		"missing context":    {encode(noContext), `current-context "gone" names no context of the kubeconfig`},
		"missing cluster":    {encode(noCluster), `contexts["ctx"].cluster "c" names no cluster of the kubeconfig`},
		"missing user":       {encode(noUser), `contexts["ctx"].user "u" names no user of the kubeconfig`},
		"no server":          {encode(noServer), `clusters["c"].server is empty`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := InlineRESTConfig(c.data)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestOnlyTheCurrentContextCounts: an exec plugin of a user the current context does not use
// is never run, so it is no reason to refuse.
func TestOnlyTheCurrentContextCounts(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh"}}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "other"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	rc, err := InlineRESTConfig(data)
	require.NoError(t, err)
	assert.Equal(t, "t", rc.BearerToken)
	assert.Nil(t, rc.ExecProvider)
}

// TestARefusedKubeconfigNeverRuns shows the attack client-go's own loader lets through, and
// that InlineRESTConfig stops it: an exec plugin that would create a file, and a tokenFile
// that would send a file's content to the kubeconfig's server.
func TestARefusedKubeconfigNeverRuns(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer server.Close()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("a secret of this process"), 0o600))
	cluster := &clientcmdapi.Cluster{Server: server.URL, InsecureSkipTLSVerify: true}
	execUser := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
		APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	fileUser := &clientcmdapi.AuthInfo{TokenFile: secret}
	for _, data := range [][]byte{write(t, cluster, execUser), write(t, cluster, fileUser)} {
		_, err := InlineRESTConfig(data)
		require.ErrorContains(t, err, "refused")
	}

	// What client-go's loader would have done with the same kubeconfigs.
	for _, data := range [][]byte{write(t, cluster, execUser), write(t, cluster, fileUser)} {
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		require.NoError(t, err)
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, _ = client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	}
	assert.FileExists(t, marker, "client-go's loader runs the exec plugin")
	assert.NotZero(t, requests.Load(), "client-go's loader sends the tokenFile's content")
}

// FuzzInlineRESTConfig: whatever the bytes, a config it returns has a server and never
// anything that runs a command, reads a file or picks a proxy.
func FuzzInlineRESTConfig(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n" +
		"clusters: [{name: c, cluster: {server: 'https://127.0.0.1'}}]\nusers: [{name: u, user: {token: t}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n" +
		"clusters: [{name: c, cluster: {server: 'https://127.0.0.1'}}]\nusers: [{name: u, user: {exec: {command: sh}}}]\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := InlineRESTConfig(data)
		if err != nil {
			return
		}
		if cfg.Host == "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.AuthConfigPersister != nil ||
			cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" ||
			cfg.Proxy != nil || cfg.Dial != nil || cfg.Transport != nil || cfg.WrapTransport != nil {
			t.Fatalf("config %+v from %q", cfg, data)
		}
	})
}
