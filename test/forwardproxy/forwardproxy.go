// Package forwardproxy runs a forward proxy on loopback for tests: HTTP CONNECT (plain or over
// TLS) or SOCKS5, in front of one server. The server is known to the proxy under a name that
// resolves nowhere else, so a client that reaches it under that name went through the proxy.
package forwardproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	socks5 "github.com/armon/go-socks5"
	"github.com/elazarl/goproxy"
)

// Options describe one proxy.
type Options struct {
	// Scheme is http, https or socks5.
	Scheme string
	// Name is the host name clients use for the server behind the proxy; Target is the address
	// (host:port) the proxy dials for it. Clients keep the port, so Target's port is the one
	// they ask for.
	Name, Target string
	// Header, when set, must be on every CONNECT request (http and https only); a CONNECT
	// without it is refused.
	Header http.Header
	// TLS serves the https proxy.
	TLS *tls.Config
}

// Proxy is a running forward proxy.
type Proxy struct {
	// URL is the proxy's own URL, e.g. socks5://127.0.0.1:40123.
	URL string

	tunnels  atomic.Int64
	refused  atomic.Int64
	listener net.Listener

	mu    sync.Mutex
	open  map[net.Conn]struct{}
	ended bool
}

// Tunnels counts the connections the proxy opened to the target.
func (p *Proxy) Tunnels() int64 { return p.tunnels.Load() }

// Refused counts the connections the proxy refused: an unknown name or a missing header.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Close stops the proxy and cuts every tunnel it opened.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	for c := range p.open {
		c.Close()
	}
	return err
}

// dial opens a tunnel to addr, cut when the proxy stops.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		c.Close()
		return nil, errors.New("the proxy is stopped")
	}
	p.tunnels.Add(1)
	p.open[c] = struct{}{}
	return c, nil
}

// Start serves a proxy on a free loopback port until ctx ends or Close is called.
func Start(ctx context.Context, opts Options) (*Proxy, error) {
	host, port, err := net.SplitHostPort(opts.Target)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", opts.Target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: opts.Scheme + "://" + l.Addr().String(), listener: l, open: map[net.Conn]struct{}{}}
	go func() {
		<-ctx.Done()
		p.Close()
	}()
	switch opts.Scheme {
	case "http", "https":
		server := &http.Server{Handler: p.connectHandler(opts, net.JoinHostPort(opts.Name, port)), ErrorLog: log.New(io.Discard, "", 0)}
		if opts.Scheme == "https" {
			if opts.TLS == nil {
				l.Close()
				return nil, errors.New("an https proxy needs a TLS configuration")
			}
			// CONNECT is HTTP/1.1: a proxy that offered h2 by ALPN would answer Go's
			// CONNECT in frames, as no real forward proxy does.
			server.TLSConfig = opts.TLS.Clone()
			server.TLSConfig.NextProtos = []string{"http/1.1"}
			server.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
			go server.ServeTLS(l, "", "")
		} else {
			go server.Serve(l)
		}
	case "socks5":
		server, err := socks5.New(&socks5.Config{
			Resolver: resolver{name: opts.Name, ip: net.ParseIP(host)},
			Rules:    onlyName{name: opts.Name, proxy: p},
			Dial:     p.dial,
			Logger:   log.New(io.Discard, "", 0),
		})
		if err != nil {
			l.Close()
			return nil, err
		}
		go server.Serve(l)
	default:
		l.Close()
		return nil, fmt.Errorf("scheme %q: want http, https or socks5", opts.Scheme)
	}
	return p, nil
}

// connectHandler tunnels CONNECT requests for name:port to the target and refuses the rest.
func (p *Proxy) connectHandler(opts Options, allowed string) http.Handler {
	proxy := goproxy.NewProxyHttpServer()
	proxy.Logger = log.New(io.Discard, "", 0)
	proxy.ConnectDial = func(network, addr string) (net.Conn, error) { return p.dial(context.Background(), network, addr) }
	proxy.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		if host != allowed || !hasHeader(ctx.Req.Header, opts.Header) {
			p.refused.Add(1)
			return goproxy.RejectConnect, host
		}
		return goproxy.OkConnect, opts.Target
	})
	return proxy
}

func hasHeader(got, want http.Header) bool {
	for name, values := range want {
		for _, v := range values {
			if !slices.Contains(got.Values(name), v) {
				return false
			}
		}
	}
	return true
}

// resolver resolves only the proxy's name.
type resolver struct {
	name string
	ip   net.IP
}

func (r resolver) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	if name != r.name {
		return ctx, nil, fmt.Errorf("%s is not known behind this proxy", name)
	}
	return ctx, r.ip, nil
}

// onlyName lets a SOCKS5 client connect only to the proxy's name, not to an address.
type onlyName struct {
	name  string
	proxy *Proxy
}

func (o onlyName) Allow(ctx context.Context, req *socks5.Request) (context.Context, bool) {
	if req.Command != socks5.ConnectCommand || req.DestAddr == nil || req.DestAddr.FQDN != o.name {
		o.proxy.refused.Add(1)
		return ctx, false
	}
	return ctx, true
}
