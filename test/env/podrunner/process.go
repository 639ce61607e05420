package podrunner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Every played process runs in a mount and UTS namespace of its own, entered by unshare
// with private mount propagation: there the pod's hosts file is bind-mounted on /etc/hosts
// and the runner's resolv.conf (nameserver 127.0.0.1) on /etc/resolv.conf, and the hostname
// is the pod's; nothing of it is visible outside. unshare and sh exec the binary in the same
// process, so the pid started is the binary's and Pdeathsig stays armed: nothing outlives
// the runner.

// wrapperTools are the absolute paths of the programs that set up a process's namespaces.
type wrapperTools struct{ unshare, sh, mount, hostname string }

func findWrapperTools() (wrapperTools, error) {
	if os.Geteuid() != 0 {
		return wrapperTools{}, fmt.Errorf("podrunner: playing pods needs root (mount namespaces for /etc/hosts)")
	}
	var t wrapperTools
	for name, p := range map[string]*string{"unshare": &t.unshare, "sh": &t.sh, "mount": &t.mount, "hostname": &t.hostname} {
		path, err := exec.LookPath(name)
		if err != nil {
			return wrapperTools{}, fmt.Errorf("podrunner: %w", err)
		}
		*p = path
	}
	return t, nil
}

// processSpec is what to run and where.
type processSpec struct {
	argv      []string // argv[0] is the binary's path
	env       []string
	dir       string
	logPath   string // appended to
	hostsFile string // bind-mounted on /etc/hosts
	hostname  string
}

// process is one run of a container's (or an exec probe's) binary.
type process struct {
	cmd   *exec.Cmd
	done  chan struct{}
	state *os.ProcessState // valid once done is closed
	err   error
}

// command wraps spec in unshare.
func (r *Runner) command(spec processSpec) *exec.Cmd {
	script := fmt.Sprintf(`%[1]s --bind %[2]s /etc/hosts && %[1]s --bind %[3]s /etc/resolv.conf && %[4]s %[5]s && exec "$0" "$@"`,
		shellQuote(r.tools.mount), shellQuote(spec.hostsFile), shellQuote(r.hosts.resolvConf),
		shellQuote(r.tools.hostname), shellQuote(spec.hostname))
	args := append([]string{"--mount", "--uts", "--propagation", "private", r.tools.sh, "-c", script}, spec.argv...)
	cmd := exec.Command(r.tools.unshare, args...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startProcess starts spec's binary with its output appended to its log.
func (r *Runner) startProcess(spec processSpec) (*process, error) {
	log, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "=== %s starting: %s\n", time.Now().Format(time.RFC3339), strings.Join(spec.argv, " "))
	cmd := r.command(spec)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(spec.argv[0]), err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.state = cmd.ProcessState
		fmt.Fprintf(log, "=== %s exited: %v\n", time.Now().Format(time.RFC3339), p.state)
		log.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, SIGKILL once kill is closed, and waits for the
// exit.
func (p *process) stop(kill <-chan struct{}) {
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-kill:
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// termination describes how the process ended, as a container status does.
func (p *process) termination() *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{FinishedAt: now(), Reason: "Error", ContainerID: fmt.Sprintf("karmadaflow://%d", p.pid())}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.ExitCode = 128 + int32(ws.Signal())
		t.Signal = int32(ws.Signal())
	} else {
		t.ExitCode = int32(p.state.ExitCode())
	}
	if t.ExitCode == 0 {
		t.Reason = "Completed"
	}
	return t
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
