package apiserverpod

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The instance's API server calls into its cluster: admission webhooks and aggregated API
// servers by their Service names (karmada-webhook.<ns>.svc, karmada-aggregated-apiserver.
// <ns>.svc.cluster.local). No such pod runs in the local environment, and resolving those
// names would ask the machine's DNS server, outside loopback. So its "cluster" egress goes
// through an HTTP CONNECT proxy on a unix socket that refuses every destination, as a
// cluster network with nothing behind the Services would.

// egressConfig is an EgressSelectorConfiguration sending the "cluster" egress to the proxy
// on a unix socket.
const egressConfig = `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`

// clusterEgress is the refusing proxy of one API server.
type clusterEgress struct {
	server *http.Server
	done   chan struct{}
}

// startClusterEgress serves the refusing proxy on dir/egress.sock and writes the API
// server's egress selector configuration; it returns the configuration's path.
func startClusterEgress(dir string) (*clusterEgress, string, error) {
	socket := filepath.Join(dir, "egress.sock")
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return nil, "", err
	}
	config := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, egressConfig, socket), 0o600); err != nil {
		listener.Close()
		return nil, "", err
	}
	e := &clusterEgress{done: make(chan struct{}), server: &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the local environment's cluster network has no endpoint for "+r.Host, http.StatusBadGateway)
		}),
	}}
	go func() { defer close(e.done); _ = e.server.Serve(listener) }()
	return e, config, nil
}

func (e *clusterEgress) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = e.server.Shutdown(ctx)
	<-e.done
}
