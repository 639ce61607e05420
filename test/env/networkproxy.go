package env

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// The binaries of apiserver-network-proxy (ANP), built by `make network-proxy-tools`.
const (
	binNetworkProxyServer = "proxy-server"
	binNetworkProxyAgent  = "proxy-agent"
)

// networkProxyHost is where the ANP server and agent listen, and the one address the agent
// opens connections to: the API servers of the environment listen there.
const networkProxyHost = "127.0.0.1"

// NetworkProxy is apiserver-network-proxy in front of one member cluster, the way Karmada
// reaches a member that joined in Pull mode: the control plane cannot dial the member, so an
// agent beside the member dials out to the proxy server, and the control plane's connections
// to the member go through the server's HTTP CONNECT front end (a Cluster's spec.proxyURL),
// then through the agent's tunnel. The front end speaks CONNECT over TLS and requires a
// client certificate (ANP refuses a TCP front end without --server-ca-cert); the agent and
// the server authenticate each other with certificates of their own CA.
//
// The server tunnels only to the hosts its agents serve (proxy strategy destHost): the agent
// serves networkProxyHost alone. ANP has no finer rule (no port), so the agent could reach
// any API server of the environment on that address, not only its member's.
type NetworkProxy struct {
	// URL is the server's front end, https://127.0.0.1:<port>, for a Cluster's spec.proxyURL.
	URL string
	// CA verifies the front end's serving certificate (for 127.0.0.1).
	CA []byte
	// ClientCert and ClientKey are a client certificate of the CA the front end requires.
	ClientCert, ClientKey []byte
	// ServerLog and AgentLog are the logs of the server and the agent.
	ServerLog, AgentLog string

	healthURL string // the server's health port: /readyz, /metrics
	server    *process
	agent     *process
}

// StartNetworkProxy starts ANP's server in http-connect mode and one agent for the named
// member, everything on 127.0.0.1 (front end, agent, admin and health ports of both), with
// certificates of its own, and returns once the agent is connected to the server. The two
// run until Stop (or the environment's Stop); their logs are <dir>/logs/<member>-proxy-server.log
// and <member>-proxy-agent.log.
func (e *Env) StartNetworkProxy(ctx context.Context, member string) (*NetworkProxy, error) {
	m := e.Member(member)
	if m == nil {
		return nil, fmt.Errorf("no member cluster %q", member)
	}
	if err := checkBinaries(e.opts.BinDir, []string{binNetworkProxyServer, binNetworkProxyAgent}); err != nil {
		return nil, fmt.Errorf("%w (`make network-proxy-tools` builds them)", err)
	}
	dir := filepath.Join(e.Dir, member+"-network-proxy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certs, err := writeNetworkProxyCerts(dir)
	if err != nil {
		return nil, fmt.Errorf("certificates of the network proxy of %s: %w", member, err)
	}
	// ANP refuses ports outside 1024-49151, and the kernel's own picks may lie above.
	ports, err := e.ports.reserveBelow(6, 20000, 32768)
	if err != nil {
		return nil, err
	}
	frontend, agentPort, adminPort, healthPort, agentHealthPort, agentAdminPort :=
		ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	file := func(name string) string { return filepath.Join(dir, name) }
	port := strconv.Itoa
	n := &NetworkProxy{
		URL:        "https://" + net.JoinHostPort(networkProxyHost, port(frontend)),
		CA:         certs["frontend-ca.crt"],
		ClientCert: certs["frontend-client.crt"],
		ClientKey:  certs["frontend-client.key"],
		ServerLog:  filepath.Join(e.Dir, "logs", member+"-"+binNetworkProxyServer+".log"),
		AgentLog:   filepath.Join(e.Dir, "logs", member+"-"+binNetworkProxyAgent+".log"),
		healthURL:  "http://" + net.JoinHostPort(networkProxyHost, port(healthPort)),
	}
	serverArgs := []string{
		"--mode=http-connect",
		"--server-id=" + member,
		"--server-bind-address=" + networkProxyHost,
		"--server-port=" + port(frontend),
		"--server-ca-cert=" + file("frontend-ca.crt"),
		"--server-cert=" + file("frontend.crt"),
		"--server-key=" + file("frontend.key"),
		"--agent-bind-address=" + networkProxyHost,
		"--agent-port=" + port(agentPort),
		"--cluster-ca-cert=" + file("tunnel-ca.crt"),
		"--cluster-cert=" + file("tunnel-server.crt"),
		"--cluster-key=" + file("tunnel-server.key"),
		"--admin-bind-address=" + networkProxyHost,
		"--admin-port=" + port(adminPort),
		"--health-bind-address=" + networkProxyHost,
		"--health-port=" + port(healthPort),
		// A connection goes to the agent that serves its destination host, or nowhere.
		"--proxy-strategies=destHost",
		"--v=2", // each CONNECT and its destination
	}
	if n.server, err = e.startProcess(member+"-"+binNetworkProxyServer, binNetworkProxyServer, serverArgs, dir, tierComponent,
		frontend, agentPort, adminPort, healthPort); err != nil {
		e.ports.release(agentHealthPort, agentAdminPort)
		return nil, err
	}
	agentArgs := []string{
		"--agent-id=" + member,
		"--agent-identifiers=ipv4=" + networkProxyHost,
		"--proxy-server-host=" + networkProxyHost,
		"--proxy-server-port=" + port(agentPort),
		"--ca-cert=" + file("tunnel-ca.crt"),
		"--agent-cert=" + file("tunnel-agent.crt"),
		"--agent-key=" + file("tunnel-agent.key"),
		"--health-server-host=" + networkProxyHost,
		"--health-server-port=" + port(agentHealthPort),
		"--admin-bind-address=" + networkProxyHost,
		"--admin-server-port=" + port(agentAdminPort),
		"--v=3", // each connection it opens, and to where
	}
	if n.agent, err = e.startProcess(member+"-"+binNetworkProxyAgent, binNetworkProxyAgent, agentArgs, dir, tierComponent,
		agentHealthPort, agentAdminPort); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	// The server is ready once an agent is connected to it.
	if err := waitFor(ctx, time.Minute, "the network proxy of "+member+" with its agent connected", func(ctx context.Context) error {
		return httpOK(ctx, n.healthURL+"/readyz")
	}, n.server, n.agent); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	e.logf("env: network proxy of %s at %s (agent connected)", member, n.URL)
	return n, nil
}

// writeNetworkProxyCerts writes into dir, as <name>.crt and <name>.key, the front end's CA
// (frontend-ca), serving certificate (frontend) and a client certificate of that CA
// (frontend-client), and the CA of the server and the agent between them (tunnel-ca), the
// server's certificate for the agent (tunnel-server) and the agent's (tunnel-agent). It
// returns their contents by file name.
func writeNetworkProxyCerts(dir string) (map[string][]byte, error) {
	loopback := []net.IP{net.ParseIP(networkProxyHost)}
	files := map[string][]byte{}
	for _, side := range []struct{ ca, server, client string }{
		{"frontend-ca", "frontend", "frontend-client"},
		{"tunnel-ca", "tunnel-server", "tunnel-agent"},
	} {
		ca, err := pki.NewAuthority("network-proxy-" + side.ca)
		if err != nil {
			return nil, err
		}
		server, err := ca.Issue(pki.LeafSpec{CommonName: "network-proxy-" + side.server, IPs: loopback, Server: true}, pki.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		client, err := ca.Issue(pki.LeafSpec{CommonName: "network-proxy-" + side.client, Client: true}, pki.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		files[side.ca+".crt"] = ca.Pair().Cert
		files[side.server+".crt"], files[side.server+".key"] = server.Cert, server.Key
		files[side.client+".crt"], files[side.client+".key"] = client.Cert, client.Key
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// StopAgent stops the agent: the server has no tunnel to the member any more.
func (n *NetworkProxy) StopAgent() error { return n.agent.stop(stopGrace) }

// Stop stops the agent and the server.
func (n *NetworkProxy) Stop() error {
	var errs []error
	for _, p := range []*process{n.agent, n.server} {
		if p != nil {
			errs = append(errs, p.stop(stopGrace))
		}
	}
	return errors.Join(errs...)
}

// Dials is the number of connections the server opened through its agent so far (its metric
// konnectivity_network_proxy_server_dial_duration_seconds_count).
func (n *NetworkProxy) Dials(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.healthURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics answered %s", n.healthURL, resp.Status)
	}
	const metric = "konnectivity_network_proxy_server_dial_duration_seconds_count "
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		if value, ok := strings.CutPrefix(s.Text(), metric); ok {
			f, err := strconv.ParseFloat(value, 64)
			return int(f), err
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, nil // no dial yet: the histogram is not written before its first observation
}

// ClientTLS is the TLS configuration of a client of the front end: it presents the client
// certificate and verifies the server with CA.
func (n *NetworkProxy) ClientTLS() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(n.ClientCert, n.ClientKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(n.CA)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// LogTail is the last lines of the server's and the agent's logs.
func (n *NetworkProxy) LogTail(lines int) string {
	return fmt.Sprintf("--- %s ---\n%s\n--- %s ---\n%s", n.ServerLog, tailFile(n.ServerLog, lines), n.AgentLog, tailFile(n.AgentLog, lines))
}
