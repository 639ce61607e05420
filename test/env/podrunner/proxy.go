package podrunner

import (
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kube-proxy role: for every Service with a cluster IP and a selector the runner listens
// on the Service's loopback address at each TCP port (and, for NodePort Services, on the
// node address at the node port) and forwards each connection to a played pod the Service
// selects that is ready (or to any of them with publishNotReadyAddresses), at the target
// port, named target ports resolved from the pod's container ports. Endpoints are read from
// the runner's own pods when a connection arrives, so they follow readiness at once.

// proxyDialTimeout bounds the connection to one endpoint; the next is tried after it.
const proxyDialTimeout = 3 * time.Second

// serviceTarget is what a listener forwards to: a port of a Service.
type serviceTarget struct {
	namespace, name string
	port            corev1.ServicePort
}

type serviceListener struct {
	listener net.Listener
	target   atomic.Pointer[serviceTarget]
}

type proxies struct {
	r         *Runner
	mu        sync.Mutex
	listeners map[string]*serviceListener // by listen address
	failed    map[string]string           // listen address → last error logged
	closed    bool
}

func newProxies(r *Runner) *proxies {
	return &proxies{r: r, listeners: map[string]*serviceListener{}, failed: map[string]string{}}
}

// sync listens on the addresses of the Services as they are now and closes the listeners
// of Services or ports that are gone. Connections already forwarded stay.
func (px *proxies) sync() {
	services, err := px.r.services.List(labels.Everything())
	if err != nil {
		return
	}
	want := map[string]serviceTarget{}
	for _, svc := range services {
		ip := px.r.addresses.serviceAddress(svc)
		if ip == nil || len(svc.Spec.Selector) == 0 {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Protocol != corev1.ProtocolTCP && sp.Protocol != "" {
				continue
			}
			t := serviceTarget{namespace: svc.Namespace, name: svc.Name, port: sp}
			want[net.JoinHostPort(ip.String(), strconv.Itoa(int(sp.Port)))] = t
			if sp.NodePort != 0 && (svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer) {
				want[net.JoinHostPort(px.r.opts.NodeIP, strconv.Itoa(int(sp.NodePort)))] = t
			}
		}
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.closed {
		return
	}
	for addr, l := range px.listeners {
		if _, ok := want[addr]; !ok {
			l.listener.Close()
			delete(px.listeners, addr)
		}
	}
	for addr, t := range want {
		if l, ok := px.listeners[addr]; ok {
			l.target.Store(&t)
			continue
		}
		listener, err := net.Listen("tcp", addr)
		if err != nil {
			// Retried at the next change of a Service; logged once per error.
			if px.failed[addr] != err.Error() {
				px.failed[addr] = err.Error()
				px.r.logf("service %s/%s: %v", t.namespace, t.name, err)
			}
			continue
		}
		delete(px.failed, addr)
		l := &serviceListener{listener: listener}
		l.target.Store(&t)
		px.listeners[addr] = l
		go px.serve(l)
	}
}

func (px *proxies) close() {
	px.mu.Lock()
	defer px.mu.Unlock()
	px.closed = true
	for addr, l := range px.listeners {
		l.listener.Close()
		delete(px.listeners, addr)
	}
}

func (px *proxies) serve(l *serviceListener) {
	for {
		conn, err := l.listener.Accept()
		if err != nil {
			return
		}
		go px.forward(conn, *l.target.Load())
	}
}

// forward connects client to one of the target's endpoints, in random order until one
// answers, and copies both ways until both sides are done.
func (px *proxies) forward(client net.Conn, t serviceTarget) {
	defer client.Close()
	endpoints := px.endpoints(t)
	rand.Shuffle(len(endpoints), func(i, j int) { endpoints[i], endpoints[j] = endpoints[j], endpoints[i] })
	for _, addr := range endpoints {
		backend, err := net.DialTimeout("tcp", addr, proxyDialTimeout)
		if err != nil {
			continue
		}
		pipe(client, backend)
		return
	}
}

// endpoints are the addresses (loopback address and target port) of the target's pods.
func (px *proxies) endpoints(t serviceTarget) []string {
	svc, err := px.r.services.Services(t.namespace).Get(t.name)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range endpointPods(svc, px.r.playedPods()) {
		if port := targetPort(p.object(), t.port); port != 0 {
			out = append(out, net.JoinHostPort(p.addr.loopback.String(), strconv.Itoa(port)))
		}
	}
	return out
}

// targetPort is the pod's port a Service port forwards to: the number, the container port
// of that name, or the Service port itself; 0 if a named port is not found.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) int {
	tp := sp.TargetPort
	if tp.Type == intstr.String {
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal {
					return int(cp.ContainerPort)
				}
			}
		}
		return 0
	}
	if tp.IntVal == 0 {
		return int(sp.Port)
	}
	return int(tp.IntVal)
}

// pipe copies between a and b both ways, passing on half-closes, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Go(func() { half(a, b) })
	wg.Go(func() { half(b, a) })
	wg.Wait()
	a.Close()
	b.Close()
}
