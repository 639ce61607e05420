package proxy

import (
	"net/http"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// transports keeps one transport per server the proxy reaches, so that its connections are
// kept alive and reused across requests; each caller's impersonation wraps it. client-go caches
// transports by their TLS settings, but never one whose config has a Proxy (a member with
// spec.proxyURL): building one per request left a connection to the forward proxy behind
// each time, idle for 90 s.
type transports struct {
	mu     sync.Mutex
	byHost map[string]sharedTransport
}

// sharedTransport is the transport built from one configuration of a server. The member
// registry hands out a new configuration when a Cluster or its Secret changes (and at least
// every refresh interval): the transport of the older one is replaced and its idle connections
// closed.
type sharedTransport struct {
	cfg *rest.Config
	rt  http.RoundTripper
}

func newTransports() *transports { return &transports{byHost: map[string]sharedTransport{}} }

// forCaller reaches cfg's server as the caller.
func (t *transports) forCaller(cfg *rest.Config, c Caller) (http.RoundTripper, error) {
	base, err := t.shared(cfg)
	if err != nil {
		return nil, err
	}
	return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: c.Name, UID: c.UID, Groups: c.Groups, Extra: c.Extra,
	}, base), nil
}

// shared is the transport of cfg, without impersonation and without a client-side timeout
// (watches and streams last as long as the caller wants).
func (t *transports) shared(cfg *rest.Config) (http.RoundTripper, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	held, ok := t.byHost[cfg.Host]
	if ok && held.cfg == cfg {
		return held.rt, nil
	}
	plain := rest.CopyConfig(cfg)
	plain.Impersonate = rest.ImpersonationConfig{}
	plain.Timeout = 0
	rt, err := rest.TransportFor(plain)
	if err != nil {
		return nil, err
	}
	if ok {
		utilnet.CloseIdleConnectionsFor(held.rt)
	}
	t.byHost[cfg.Host] = sharedTransport{cfg: cfg, rt: rt}
	return rt, nil
}
