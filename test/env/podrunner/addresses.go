package podrunner

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Addresses. Everything the played processes listen on or dial is a loopback address, in the
// block of the node's address 127.<b>.0.x (an environment's address block, so that
// environments can run side by side; b is 0 for the first):
//   - every pod gets one of 127.<b+1>.0.0/16 to listen on, its "loopback address";
//   - every Service with a cluster IP gets 127.<b+2>.<c>.<d> for cluster IP a.b.c.d, where the
//     runner forwards its ports (the environment's Service CIDR is a /16, so no two Services
//     share one);
//   - 127.<b>.0.x are the environment's node addresses; NodePorts are served there.
//
// The API server accepts a loopback status.podIP (pod validation checks the syntax only),
// but EndpointSlice and Endpoints validation refuse loopback addresses ("may not be in the
// loopback range"), so kube-controller-manager could publish no endpoints for the played
// pods. So the pod IP written to the API is one of the node's pod CIDR, taken from its upper
// half (KWOK hands out the lower addresses of the same CIDR to the pods it fakes), and the
// loopback address carries the same last two octets: pod IP 10.250.128.5 is 127.1.128.5 in
// the first block.
// Inside the pod, $(POD_IP) (status.podIP in env) is the loopback address: that is where its
// processes must listen. Nothing ever dials a pod CIDR address.

// podAddress is where a pod's processes listen and the pod IP the API shows for it.
type podAddress struct {
	loopback net.IP
	podIP    string
}

// addressPool hands out pod addresses of one node.
type addressPool struct {
	base     uint32 // first address of the pod CIDR; 0: no CIDR, pod IPs are loopback
	lo, hi   uint32 // offsets handed out, inclusive
	mu       sync.Mutex
	used     map[uint32]bool
	nodeAddr podAddress // of hostNetwork pods
	// podBase and serviceBase are the loopback /16s of pods and Services: the two after the
	// node address's block.
	podBase, serviceBase net.IP
}

// newAddressPool hands out addresses of podCIDR (IPv4; empty: loopback pod IPs).
func newAddressPool(podCIDR, nodeIP string) (*addressPool, error) {
	node := net.ParseIP(nodeIP).To4()
	if node == nil || node[0] != 127 || node[1] > 253 {
		return nil, fmt.Errorf("node IP %q: want an IPv4 loopback address 127.<b>.0.x with b below 254", nodeIP)
	}
	p := &addressPool{used: map[uint32]bool{}, lo: 1, hi: 0xfffe,
		nodeAddr:    podAddress{loopback: node, podIP: nodeIP},
		podBase:     net.IPv4(127, node[1]+1, 0, 0).To4(),
		serviceBase: net.IPv4(127, node[1]+2, 0, 0).To4()}
	if podCIDR == "" {
		return p, nil
	}
	_, cidr, err := net.ParseCIDR(podCIDR)
	if err != nil || cidr.IP.To4() == nil {
		return nil, fmt.Errorf("node pod CIDR %q: want an IPv4 CIDR", podCIDR)
	}
	ones, _ := cidr.Mask.Size()
	size := uint32(1) << (32 - ones)
	if size < 8 {
		return nil, fmt.Errorf("node pod CIDR %s is too small", podCIDR)
	}
	p.base = binary.BigEndian.Uint32(cidr.IP.To4())
	// The upper half, without the broadcast address, at most 65534 addresses so that the
	// last two octets map one-to-one onto the pods' loopback /16.
	p.lo, p.hi = size/2+1, min(size-2, size/2+0xfffe)
	return p, nil
}

// allocate returns a free address for pod, preferring the pod IP of its status (a pod played
// by an earlier runner keeps its address).
func (p *addressPool) allocate(pod *corev1.Pod) (podAddress, error) {
	if pod.Spec.HostNetwork {
		return p.nodeAddr, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.offsetOf(pod.Status.PodIP); ok && !p.used[off] {
		p.used[off] = true
		return p.address(off), nil
	}
	for off := p.lo; off <= p.hi; off++ {
		if !p.used[off] {
			p.used[off] = true
			return p.address(off), nil
		}
	}
	return podAddress{}, fmt.Errorf("no free pod address (%d in use)", len(p.used))
}

func (p *addressPool) release(a podAddress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.offsetOf(a.podIP); ok {
		delete(p.used, off)
	}
}

// offsetOf is the offset of a pod IP this pool hands out.
func (p *addressPool) offsetOf(podIP string) (uint32, bool) {
	ip := net.ParseIP(podIP).To4()
	if ip == nil {
		return 0, false
	}
	base := p.base
	if base == 0 {
		base = binary.BigEndian.Uint32(p.podBase)
	}
	off := binary.BigEndian.Uint32(ip) - base
	return off, off >= p.lo && off <= p.hi
}

func (p *addressPool) address(off uint32) podAddress {
	loopback := make(net.IP, 4)
	binary.BigEndian.PutUint32(loopback, binary.BigEndian.Uint32(p.podBase)|off&0xffff)
	if p.base == 0 {
		return podAddress{loopback: loopback, podIP: loopback.String()}
	}
	podIP := make(net.IP, 4)
	binary.BigEndian.PutUint32(podIP, p.base+off)
	return podAddress{loopback: loopback, podIP: podIP.String()}
}

// serviceAddress is the loopback address of a Service with a cluster IP, nil for headless
// and ExternalName Services.
func (p *addressPool) serviceAddress(svc *corev1.Service) net.IP {
	ip := net.ParseIP(svc.Spec.ClusterIP).To4()
	if ip == nil {
		return nil
	}
	return net.IPv4(p.serviceBase[0], p.serviceBase[1], ip[2], ip[3]).To4()
}
