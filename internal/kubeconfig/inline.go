// Package kubeconfig owns reading a kubeconfig that someone other than the operator wrote (a
// tenant's, from a Secret of the tenant's namespace) as a rest.Config with inline credentials
// only. client-go's own loaders honour every field of a kubeconfig: exec runs any command,
// auth-provider runs a plugin, tokenFile and the other file paths read files, proxy-url sends
// the requests through a proxy; done in the worker, as the worker, each would hand the tenant
// the worker's machine, files or traffic. So such fields are refused, naming the field and
// why, and the rest.Config is built by hand from the inline fields alone.
package kubeconfig

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Why a field is refused.
const (
	runsCommand   = "would run a command in the worker"
	runsPlugin    = "would run an authentication plugin in the worker"
	readsFile     = "would read a file of the worker's"
	sendsThrough  = "would send the worker's requests through a proxy the kubeconfig names"
	onlyInlineAre = "only inline credentials are accepted: token, client-certificate-data with client-key-data, " +
		"username with password, and certificate-authority-data"
)

// InlineRESTConfig is the rest.Config of data's current context, built from its cluster's
// server, tls-server-name, insecure-skip-tls-verify, certificate-authority-data and
// disable-compression, and its user's token, client-certificate-data, client-key-data,
// username, password and act-as fields. A field that would run something or read a file in
// this process, or send its requests through a proxy, is an error that names it (e.g.
// `users["admin"].exec`) and says why; so is a kubeconfig whose current context, cluster or
// user is missing.
//
// Allowed on purpose: username and password (basic auth) and act-as (impersonation) are
// inline and only change how the kubeconfig's own credentials present themselves to the
// server it names; insecure-skip-tls-verify weakens only the connection to that server. None
// of them reads, runs or sends anything of this process's. Other fields of the kubeconfig
// (other contexts, clusters and users, extensions, preferences) are not used.
func InlineRESTConfig(data []byte) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, errors.New("the kubeconfig is empty")
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig does not parse: %w", err)
	}
	name := cfg.CurrentContext
	if name == "" {
		return nil, errors.New("the kubeconfig has no current-context")
	}
	kctx := cfg.Contexts[name]
	if kctx == nil {
		return nil, fmt.Errorf("current-context %q names no context of the kubeconfig", name)
	}
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("contexts[%q].cluster %q names no cluster of the kubeconfig", name, kctx.Cluster)
	}
	user := &clientcmdapi.AuthInfo{} // no user: anonymous
	if kctx.AuthInfo != "" {
		if user = cfg.AuthInfos[kctx.AuthInfo]; user == nil {
			return nil, fmt.Errorf("contexts[%q].user %q names no user of the kubeconfig", name, kctx.AuthInfo)
		}
	}
	if refused := refusedFields(kctx.Cluster, cluster, kctx.AuthInfo, user); len(refused) > 0 {
		return nil, fmt.Errorf("%s; %s", strings.Join(refused, "; "), onlyInlineAre)
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("clusters[%q].server is empty", kctx.Cluster)
	}
	return &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			Insecure:   cluster.InsecureSkipTLSVerify,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		DisableCompression: cluster.DisableCompression,
		BearerToken:        user.Token,
		Username:           user.Username,
		Password:           user.Password,
		Impersonate: rest.ImpersonationConfig{
			UserName: user.Impersonate,
			UID:      user.ImpersonateUID,
			Groups:   user.ImpersonateGroups,
			Extra:    user.ImpersonateUserExtra,
		},
	}, nil
}

// refusedFields lists the fields of the cluster and the user that InlineRESTConfig refuses,
// each as "<field>: refused, it <why>", in the order of clientcmdapi's types.
func refusedFields(clusterName string, cluster *clientcmdapi.Cluster, userName string, user *clientcmdapi.AuthInfo) []string {
	var refused []string
	refuse := func(set bool, kind, name, field, why string) {
		if set {
			refused = append(refused, fmt.Sprintf("%s[%q].%s: refused, it %s", kind, name, field, why))
		}
	}
	refuse(cluster.CertificateAuthority != "", "clusters", clusterName, "certificate-authority", readsFile)
	refuse(cluster.ProxyURL != "", "clusters", clusterName, "proxy-url", sendsThrough)
	refuse(user.ClientCertificate != "", "users", userName, "client-certificate", readsFile)
	refuse(user.ClientKey != "", "users", userName, "client-key", readsFile)
	refuse(user.TokenFile != "", "users", userName, "tokenFile", readsFile)
	refuse(user.AuthProvider != nil, "users", userName, "auth-provider", runsPlugin)
	refuse(user.Exec != nil, "users", userName, "exec", runsCommand)
	return refused
}
