package podrunner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Name resolution without DNS: each played pod's /etc/hosts is a file the runner rewrites
// whenever Services or pods change, naming
//   - every Service with a cluster IP by its loopback address,
//   - every headless Service by its endpoints' loopback addresses (ready pods, or all with
//     publishNotReadyAddresses),
//   - every pod with a hostname and a subdomain that is a headless Service of its namespace
//     (StatefulSet pods: <pod>.<service>.<ns>.svc.<domain>),
//   - every ExternalName Service by what its externalName names,
// each as <name>.<ns>.svc.<domain>, <name>.<ns>.svc and <name>.<ns>, and as <name> in the
// Service's own namespace, since there are no search domains. /etc/resolv.conf names
// 127.0.0.1, so a name missing here fails at once instead of being asked of the machine's
// resolver. The files are rewritten in place (same inode) because they are bind-mounted.

// hostsDebounce gathers bursts of changes into one rewrite.
const hostsDebounce = 100 * time.Millisecond

type hostsFiles struct {
	r          *Runner
	resolvConf string
	dirty      chan struct{}
	closed     chan struct{}
	closeOnce  sync.Once
	mu         sync.Mutex // one rewrite at a time
}

func newHostsFiles(r *Runner) (*hostsFiles, error) {
	h := &hostsFiles{r: r, resolvConf: filepath.Join(r.opts.Dir, "resolv.conf"), dirty: make(chan struct{}, 1), closed: make(chan struct{})}
	if err := os.WriteFile(h.resolvConf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return nil, err
	}
	return h, nil
}

// changed asks for a rewrite soon.
func (h *hostsFiles) changed() {
	select {
	case h.dirty <- struct{}{}:
	default:
	}
}

func (h *hostsFiles) close() { h.closeOnce.Do(func() { close(h.closed) }) }

// run rewrites the files after changes until close.
func (h *hostsFiles) run() {
	for {
		select {
		case <-h.closed:
			return
		case <-h.dirty:
		}
		select {
		case <-h.closed:
			return
		case <-time.After(hostsDebounce):
		}
		h.refresh()
	}
}

// hostEntry names an address: name is relative to namespace ("svc", "pod-0.svc").
type hostEntry struct {
	ip        string
	name      string
	namespace string
}

// refresh rewrites every played pod's hosts file whose content changed.
func (h *hostsFiles) refresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	entries := h.entries()
	for _, p := range h.r.playedPods() {
		// A pod forgotten meanwhile has no directory any more.
		if err := writeInPlace(p.hostsFile(), h.render(p, entries)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.r.logf("hosts file of %s: %v", p.key, err)
		}
	}
}

// entries are the names of every Service and pod DNS name.
func (h *hostsFiles) entries() []hostEntry {
	services, err := h.r.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	pods := h.r.playedPods()
	var entries []hostEntry
	headless := map[string]*corev1.Service{} // by namespace/name
	var external []*corev1.Service
	for _, svc := range services {
		switch {
		case svc.Spec.Type == corev1.ServiceTypeExternalName:
			external = append(external, svc)
		case svc.Spec.ClusterIP == corev1.ClusterIPNone:
			headless[svc.Namespace+"/"+svc.Name] = svc
			for _, p := range endpointPods(svc, pods) {
				entries = append(entries, hostEntry{ip: p.addr.loopback.String(), name: svc.Name, namespace: svc.Namespace})
			}
		default:
			if ip := h.r.addresses.serviceAddress(svc); ip != nil {
				entries = append(entries, hostEntry{ip: ip.String(), name: svc.Name, namespace: svc.Namespace})
			}
		}
	}
	for _, p := range pods {
		svc := headless[p.namespace+"/"+p.subdomain]
		if p.subdomain == "" || svc == nil || p.isTerminating() || !(p.ready() || svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		entries = append(entries, hostEntry{ip: p.addr.loopback.String(), name: p.hostname + "." + p.subdomain, namespace: p.namespace})
	}
	// ExternalName: the addresses of what the external name names, if that is a name of
	// this cluster or a loopback address; any other name stays unresolvable.
	byFQDN := map[string][]string{}
	for _, e := range entries {
		fqdn := e.name + "." + e.namespace + ".svc." + h.r.opts.ClusterDomain
		byFQDN[fqdn] = append(byFQDN[fqdn], e.ip)
		byFQDN[e.name+"."+e.namespace+".svc"] = append(byFQDN[e.name+"."+e.namespace+".svc"], e.ip)
	}
	for _, svc := range external {
		target := strings.TrimSuffix(svc.Spec.ExternalName, ".")
		ips := byFQDN[target]
		if ip := net.ParseIP(target); ip != nil && ip.IsLoopback() {
			ips = []string{ip.String()}
		}
		for _, ip := range ips {
			entries = append(entries, hostEntry{ip: ip, name: svc.Name, namespace: svc.Namespace})
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.ip < b.ip
	})
	return entries
}

// endpointPods are the played pods a Service with a selector sends traffic to: ready (or
// all with publishNotReadyAddresses) and not terminating.
func endpointPods(svc *corev1.Service, pods []*pod) []*pod {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var out []*pod
	for _, p := range pods {
		if p.namespace != svc.Namespace || p.isTerminating() || !selector.Matches(labels.Set(p.object().Labels)) {
			continue
		}
		if svc.Spec.PublishNotReadyAddresses || p.ready() {
			out = append(out, p)
		}
	}
	return out
}

// render is the hosts file of pod p, as the kubelet writes it, then the cluster's names.
func (h *hostsFiles) render(p *pod, entries []hostEntry) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by the karmadaflow pod runner.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if p.subdomain != "" {
		fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", p.addr.loopback, p.hostname, p.subdomain, p.namespace, h.r.opts.ClusterDomain, p.hostname)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", p.addr.loopback, p.hostname)
	}
	for _, e := range entries {
		names := []string{
			e.name + "." + e.namespace + ".svc." + h.r.opts.ClusterDomain,
			e.name + "." + e.namespace + ".svc",
			e.name + "." + e.namespace,
		}
		if e.namespace == p.namespace {
			names = append(names, e.name)
		}
		fmt.Fprintf(&b, "%s\t%s\n", e.ip, strings.Join(names, " "))
	}
	return b.Bytes()
}

// writeInPlace replaces the content of path, keeping its inode (a bind mount shows the file
// it was made of), unless the content is the same already.
func writeInPlace(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}
