package env

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// KWOK stands in for each node's kubelet. Besides node and pod status it serves the kubelet
// endpoint that API servers dial for logs, exec, attach and port-forward, on the node's
// loopback address, with a certificate of the cluster's CA. What it serves there:
//   - logs and attach: one log file per cluster, in the CRI log format, written by the
//     environment for every container of the cluster (tests append to it for `logs -f`);
//   - exec: commands run on this machine by KWOK, in a working directory of the cluster's own
//     (kubectl cp too, in and out);
//   - port-forward: every pod port reaches the environment's TCP echo server on 127.0.0.1.
//
// With Options.PlayPods, the host's pods that karmadaflow provisions are left to the pod
// runner instead, which runs them for real (see playpods.go).

// PodLogLines is how many lines the log of every container holds when the environment starts.
const PodLogLines = 3

// PodLogFile is the log file KWOK serves as the log of every container in the cluster.
func (c *Cluster) PodLogFile() string { return c.file("pod.log") }

// ExecDir is the working directory of the commands exec'd in the cluster's pods.
func (c *Cluster) ExecDir() string { return c.file("exec") }

// PodLog is what the log of every container in the cluster says once the environment has
// started, as kubectl logs prints it.
func (c *Cluster) PodLog() string {
	var b strings.Builder
	for i := 1; i <= PodLogLines; i++ {
		fmt.Fprintf(&b, "%s: log line %d\n", c.Name, i)
	}
	return b.String()
}

// AppendPodLog appends line to the log of every container in the cluster.
func (c *Cluster) AppendPodLog(line string) error {
	f, err := os.OpenFile(c.PodLogFile(), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(criLogLine(line))
	return errors.Join(err, f.Close())
}

// criLogLine is one line of a container log as container runtimes write them.
func criLogLine(line string) string {
	return time.Now().UTC().Format(time.RFC3339Nano) + " stdout F " + line + "\n"
}

// writeKWOKConfig writes the cluster's log file, exec directory and the --config file of its
// KWOK: the stages, then what KWOK serves on its kubelet endpoint.
func (c *Cluster) writeKWOKConfig(stages []byte, echoAddress string) error {
	var log strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(c.PodLog(), "\n"), "\n") {
		log.WriteString(criLogLine(strings.TrimSuffix(line, "\n")))
	}
	if err := os.WriteFile(c.PodLogFile(), []byte(log.String()), 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(c.ExecDir(), 0o700); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(echoAddress)
	if err != nil {
		return err
	}
	var config bytes.Buffer
	config.Write(stages)
	fmt.Fprintf(&config, `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: {name: every-container}
spec:
  logs: [{logsFile: %[1]q, follow: true}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata: {name: every-container}
spec:
  attaches: [{logsFile: %[1]q}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata: {name: every-container}
spec:
  # KWOK v0.8.0 never closes a command's stdin: GNU tar, which kubectl cp runs to unpack
  # into a pod, then waits for the rest of a 10 KiB record forever; in records of one
  # block it stops at the archive's end.
  execs: [{local: {workDir: %[2]q, envs: [{name: TAR_OPTIONS, value: --blocking-factor=1}]}}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata: {name: every-port}
spec:
  forwards: [{target: {address: %[3]q, port: %[4]s}}]
`, c.PodLogFile(), c.ExecDir(), host, port)
	return os.WriteFile(c.file("kwok.yaml"), config.Bytes(), 0o600)
}

// echoServer answers every TCP connection with what it receives: the target of every pod
// port KWOK forwards.
type echoServer struct{ listener net.Listener }

func startEchoServer() (*echoServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("echo server: %w", err)
	}
	s := &echoServer{listener: l}
	go s.serve()
	return s, nil
}

func (s *echoServer) serve() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			_, _ = io.Copy(conn, conn)
		}()
	}
}

func (s *echoServer) address() string { return s.listener.Addr().String() }

// close stops accepting; connections end when their clients close them.
func (s *echoServer) close() error { return s.listener.Close() }
