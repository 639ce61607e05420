package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/karmadaflow/karmadaflow/test/bench"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// New callers during a flood from one source (issue 49): the first request of callers the proxy
// has never seen, each with a token of its own from 127.0.0.3, without a flood and while
// 127.0.0.2 sends random bad bearer tokens. The proxy counts tokens it does not know per
// source address, so the flood spends its own budget and the new callers find review slots.

const (
	newCallerSA       = "bench-newcomer"
	newCallerInterval = 200 * time.Millisecond
	flooderSource     = "127.0.0.2"
	newCallerSource   = "127.0.0.3"
)

// clientFrom connects to the proxy from the loopback address source, up to conns connections.
func clientFrom(tlsConfig *tls.Config, source string, conns int) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(),
		DialContext: dialer.DialContext, MaxIdleConnsPerHost: conns}}
}

// newCallerTokens makes the ServiceAccount newCallerSA of the control plane a caller of the
// proxy that views the members, and returns n tokens of it, each new to the proxy.
func newCallerTokens(ctx context.Context, e *env.Env, n int) ([]string, error) {
	cp := e.ControlPlane.Client()
	exists := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: newCallerSA, Namespace: "default"}}
	user := []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccount:default:" + newCallerSA}}
	if _, err := cp.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: newCallerSA}}, metav1.CreateOptions{}); exists(err) != nil {
		return nil, err
	}
	if _, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: newCallerSA},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"search.karmada.io"}, Resources: []string{"proxying/proxy"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); exists(err) != nil {
		return nil, err
	}
	bind := func(c kubernetes.Interface, role string, subjects []rbacv1.Subject) error {
		_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: newCallerSA},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}, Subjects: subjects}, metav1.CreateOptions{})
		return exists(err)
	}
	if err := bind(cp, newCallerSA, subject); err != nil {
		return nil, err
	}
	for _, m := range e.Members {
		if err := bind(m.Client(), "view", user); err != nil {
			return nil, err
		}
	}
	exp := int64(3600)
	var out []string
	for range n {
		tr, err := cp.CoreV1().ServiceAccounts("default").CreateToken(ctx, newCallerSA,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("a token of %s: %w", newCallerSA, err)
		}
		out = append(out, tr.Status.Token)
	}
	return out, nil
}

// newCallersPhase is what one phase measured.
type newCallersPhase struct {
	name    string
	callers answers // the first request of each new caller
	flood   *flood  // nil without a flood
}

// measureNewCallers runs n new callers' first requests without a flood, then n more during a
// flood from another source, and reports their latency.
func measureNewCallers(ctx context.Context, report io.Writer, e *env.Env, proxyURL string, tlsConfig *tls.Config, rate, n int) error {
	tokens, err := newCallerTokens(ctx, e, 2*n+1)
	if err != nil {
		return fmt.Errorf("new callers: %w", err)
	}
	url := proxyURL + floodPath
	callers := clientFrom(tlsConfig, newCallerSource, 4)
	// The new callers' rights in the members are in place (a token of their own).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		code, _, err := getWithToken(ctx, callers, url, tokens[2*n])
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("new callers: the proxy does not serve %s: %d %v", newCallerSA, code, err)
		}
	}
	var phases []*newCallersPhase
	for i, flooded := range []bool{false, true} {
		p := &newCallersPhase{name: "no flood"}
		if flooded {
			p.name = "during flood"
			p.flood = startFlood(ctx, clientFrom(tlsConfig, flooderSource, floodConnections), url, rate)
			time.Sleep(floodWarmUp)
		}
		log.Printf("new callers: %s", p.name)
		for _, token := range tokens[i*n : (i+1)*n] {
			begin := time.Now()
			code, body, err := getWithToken(ctx, callers, url, token)
			p.callers.record(code, body, time.Since(begin), err)
			time.Sleep(newCallerInterval)
		}
		if p.flood != nil {
			p.flood.stop()
		}
		phases = append(phases, p)
	}
	newCallersReport(report, phases, rate, n)
	return nil
}

func newCallersReport(report io.Writer, phases []*newCallersPhase, rate, n int) {
	fmt.Fprintf(report, "\n## New callers during a flood from one source\n\n")
	fmt.Fprintf(report, "%d callers the proxy never saw, each with a token of its own, send one GET of %s from %s, %s apart "+
		"(latency: sent until the body is read, TokenReview and SubjectAccessReview included); once without a flood and once while %s "+
		"sends %d random bad bearer tokens a second from up to %d connections (starting %s before the first caller).\n\n",
		n, floodPath, newCallerSource, newCallerInterval, flooderSource, rate, floodConnections, floodWarmUp)
	fmt.Fprintf(report, "| phase | first requests | answers | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
	for _, p := range phases {
		fmt.Fprintf(report, "| %s | %d | %s | %s |\n", p.name, len(p.callers.all())+p.callers.failed, p.callers.codes(), percentiles(p.callers.all()))
	}
	for _, p := range phases {
		if p.callers.refusal != "" {
			fmt.Fprintf(report, "\nA new caller's first refusal, %s: `%s`\n", p.name, p.callers.refusal)
		}
		if f := p.flood; f != nil {
			total := len(f.answers.all())
			fmt.Fprintf(report, "\nBad tokens from %s %s: %d answers in %s (%.0f/s), %d not sent for want of a free connection; answers: %s.\n",
				flooderSource, p.name, total, bench.FormatDuration(f.took), float64(total)/f.took.Seconds(), f.skipped, f.answers.codes())
		}
	}
}
