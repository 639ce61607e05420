package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"POD_IP": "127.1.128.1", "NAME": "etcd-0", "EMPTY": ""}
	for in, want := range map[string]string{
		"--listen=http://$(POD_IP):2379": "--listen=http://127.1.128.1:2379",
		"$(NAME).$(NAME)":                "etcd-0.etcd-0",
		"$(UNKNOWN)":                     "$(UNKNOWN)",
		"$$(POD_IP)":                     "$(POD_IP)",
		"$$$(POD_IP)":                    "$127.1.128.1",
		"a$b":                            "a$b",
		"trailing$":                      "trailing$",
		"$(open":                         "$(open",
		"x$(EMPTY)y":                     "xy",
	} {
		if got := expand(in, envLookup(vars)); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathMapRewrite(t *testing.T) {
	m := pathMap{
		{container: "/etc/karmada/pki/etcd", host: "/d/volumes/etcd-cert"},
		{container: "/etc/karmada/pki", host: "/d/volumes/cert"},
		{container: "/var/lib/etcd", host: "/d/volumes/data"},
	}
	for in, want := range map[string]string{
		"--tls-cert-file=/etc/karmada/pki/apiserver.crt":  "--tls-cert-file=/d/volumes/cert/apiserver.crt",
		"--etcd-cafile=/etc/karmada/pki/etcd/ca.crt":      "--etcd-cafile=/d/volumes/etcd-cert/ca.crt",
		"--data-dir=/var/lib/etcd":                        "--data-dir=/d/volumes/data",
		"--data-dir=/var/lib/etcd-other":                  "--data-dir=/var/lib/etcd-other",
		"--files=/var/lib/etcd/a,/etc/karmada/pki/b":      "--files=/d/volumes/data/a,/d/volumes/cert/b",
		"/etc/karmada/pki":                                "/d/volumes/cert",
		"--x=/opt/etc/karmada/pki/a":                      "--x=/opt/etc/karmada/pki/a",
		"--kubeconfig=/etc/karmada/config/kubeconfig":     "--kubeconfig=/etc/karmada/config/kubeconfig",
		"--listen-client-urls=http://$(POD_IP):2379/path": "--listen-client-urls=http://$(POD_IP):2379/path",
	} {
		if got := m.rewrite(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAddressPool(t *testing.T) {
	pool, err := newAddressPool("10.250.0.0/16", "127.0.0.10")
	if err != nil {
		t.Fatal(err)
	}
	a, err := pool.allocate(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if a.podIP != "10.250.128.1" || a.loopback.String() != "127.1.128.1" {
		t.Fatalf("first address = %s / %s", a.podIP, a.loopback)
	}
	b, _ := pool.allocate(&corev1.Pod{Status: corev1.PodStatus{PodIP: "10.250.200.7"}})
	if b.podIP != "10.250.200.7" || b.loopback.String() != "127.1.200.7" {
		t.Fatalf("adopted address = %s / %s", b.podIP, b.loopback)
	}
	pool.release(a)
	if c, _ := pool.allocate(&corev1.Pod{}); c.podIP != a.podIP {
		t.Fatalf("released address not reused: %s", c.podIP)
	}
	host, _ := pool.allocate(&corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}})
	if host.podIP != "127.0.0.10" {
		t.Fatalf("host network pod address = %s", host.podIP)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4"}}
	if ip := pool.serviceAddress(svc); ip.String() != "127.2.3.4" {
		t.Fatalf("service address = %s", ip)
	}
}

// TestAddressPoolOfAnotherBlock: a node of an environment's later address block (127.4.0.10)
// gives its pods and Services the two /16s after it, which no other block uses.
func TestAddressPoolOfAnotherBlock(t *testing.T) {
	pool, err := newAddressPool("10.250.0.0/16", "127.4.0.10")
	if err != nil {
		t.Fatal(err)
	}
	a, err := pool.allocate(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if a.podIP != "10.250.128.1" || a.loopback.String() != "127.5.128.1" {
		t.Fatalf("first address = %s / %s", a.podIP, a.loopback)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4"}}
	if ip := pool.serviceAddress(svc); ip.String() != "127.6.3.4" {
		t.Fatalf("service address = %s", ip)
	}
	if _, err := newAddressPool("10.250.0.0/16", "10.0.0.10"); err == nil {
		t.Fatal("a node address outside 127.0.0.0/8 was taken")
	}
}
