package podrunner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness probes, as the kubelet runs them: the first one initialDelaySeconds after the
// process started, then every periodSeconds; successThreshold successes in a row make the
// container ready, failureThreshold failures in a row not ready. The API server defaults an
// unset periodSeconds to 10 (and timeoutSeconds to 1, thresholds to 1 and 3) before the
// runner sees the pod, so the runner honours what it reads; the zero values are only
// defaulted here for objects that bypassed that (1 s period, to keep tests fast).
// httpGet probes count 200-399 as success and skip certificate verification for HTTPS;
// tcpSocket probes succeed when a connection opens; exec probes run the command like the
// container (same namespaces and environment) and succeed with exit code 0.

// probeReadiness runs the container's readiness probe for the process until ctx ends.
func (c *container) probeReadiness(ctx context.Context, proc *process) {
	probe := c.spec.ReadinessProbe
	period := seconds(probe.PeriodSeconds, time.Second)
	timeout := seconds(probe.TimeoutSeconds, time.Second)
	successes, failures := int32(0), int32(0)
	successThreshold := max(probe.SuccessThreshold, 1)
	failureThreshold := max(probe.FailureThreshold, 1)
	delay := time.Duration(probe.InitialDelaySeconds) * time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-proc.done:
			return
		case <-time.After(delay):
		}
		delay = period
		attempt, cancel := context.WithTimeout(ctx, timeout)
		err := c.probe(attempt, &probe.ProbeHandler)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
		}
		ready := c.snapshot().ready
		switch {
		case !ready && successes >= successThreshold:
			c.update(func(s *containerState) { s.ready = true })
		case ready && failures >= failureThreshold:
			c.pod.r.logf("pod %s container %s: readiness probe failed: %v", c.pod.key, c.spec.Name, err)
			c.update(func(s *containerState) { s.ready = false })
		}
	}
}

func seconds(s int32, fallback time.Duration) time.Duration {
	if s <= 0 {
		return fallback
	}
	return time.Duration(s) * time.Second
}

// probe runs one probe of the handler.
func (c *container) probe(ctx context.Context, h *corev1.ProbeHandler) error {
	switch {
	case h.HTTPGet != nil:
		return c.probeHTTP(ctx, h.HTTPGet)
	case h.TCPSocket != nil:
		addr, err := c.probeAddress(h.TCPSocket.Host, h.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	case h.Exec != nil:
		return c.probeExec(ctx, h.Exec.Command)
	}
	return errors.New("only httpGet, tcpSocket and exec probes are supported")
}

// probeAddress is host:port of a probe: the pod's loopback address unless host is given (a
// loopback address only: nothing is dialled outside 127.0.0.0/8).
func (c *container) probeAddress(host string, port intstr.IntOrString) (string, error) {
	if host == "" {
		host = c.pod.addr.loopback.String()
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("probe host %s is not a loopback address", host)
	}
	number := port.IntValue()
	if port.Type == intstr.String {
		number = 0
		for _, cp := range c.spec.Ports {
			if cp.Name == port.StrVal {
				number = int(cp.ContainerPort)
			}
		}
		if number == 0 {
			return "", fmt.Errorf("no container port named %q", port.StrVal)
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(number)), nil
}

// probeTransport never uses a proxy from the environment and, like the kubelet, does not
// verify serving certificates.
var probeTransport = &http.Transport{
	Proxy:             nil,
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes
	DisableKeepAlives: true,
}

func (c *container) probeHTTP(ctx context.Context, get *corev1.HTTPGetAction) error {
	addr, err := c.probeAddress(get.Host, get.Port)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := get.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: addr}
	if u, err = u.Parse(path); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-probe/karmadaflow")
	req.Header.Set("Accept", "*/*")
	for _, h := range get.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
		} else {
			req.Header.Add(h.Name, h.Value)
		}
	}
	// A redirect is a success, as the kubelet counts one to another host.
	client := &http.Client{Transport: probeTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe %s answered %s", u, resp.Status)
	}
	return nil
}

// probeExec runs the command as the container's own (its binary resolved like an image's
// when BinDir has it, otherwise from PATH), in the pod's namespaces and environment.
func (c *container) probeExec(ctx context.Context, command []string) error {
	if len(command) == 0 {
		return errors.New("empty exec probe command")
	}
	x, err := c.execContext(c.pod.object())
	if err != nil {
		return err
	}
	bin := filepath.Join(c.pod.r.opts.BinDir, filepath.Base(command[0]))
	if _, err := os.Stat(bin); err != nil {
		bin = command[0]
	}
	argv := x.argv(bin, command[1:])
	cmd := c.pod.r.command(processSpec{argv: argv, env: x.env, dir: x.workDir, hostsFile: c.pod.hostsFile(), hostname: c.pod.hostname})
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
}
