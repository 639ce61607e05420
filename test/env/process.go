package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Stop order: components that talk to an apiserver first, then the apiservers, then etcd.
const (
	tierComponent = iota
	tierAPIServer
	tierStorage
	tierCount
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// process is one child process of the environment. It runs in its own process group and
// dies with the Go program that started it (Pdeathsig), so a crashed test leaves nothing
// behind.
type process struct {
	name    string // <cluster>-<component>, also the log file's name
	bin     string
	args    []string
	workDir string
	logPath string
	tier    int
	user    *syscall.Credential // nil: this process's user

	cmd  *exec.Cmd
	done chan struct{}
	err  error // the result of Wait, valid once done is closed
}

// startProcess starts bin with args, appending its output to logPath.
func startProcess(name, bin string, args []string, workDir, logPath string, tier int) (*process, error) {
	return startProcessAs(nil, name, bin, args, workDir, logPath, tier)
}

// startProcessAs is startProcess as another user (nil: this process's user).
func startProcessAs(user *syscall.Credential, name, bin string, args []string, workDir, logPath string, tier int) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "=== %s starting: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = workDir
	// Temporal's servers ask updates.temporal.io for new versions when they start, unless
	// told not to; nothing here may leave loopback.
	cmd.Env = append(os.Environ(), "TEMPORAL_VERSION_CHECK_DISABLED=1")
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: user}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, bin: bin, args: args, workDir: workDir, logPath: logPath, tier: tier, user: user, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// restart starts a new process with the same binary, flags and log file.
func (p *process) restart() (*process, error) {
	return startProcessAs(p.user, p.name, p.bin, p.args, p.workDir, p.logPath, p.tier)
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the exit.
// A grace of 0 sends SIGKILL only.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := p.pid() // Setpgid makes the pid the group id
	if grace > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}

// failed wraps err with the process name and the tail of its log.
func (p *process) failed(err error) error {
	return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", p.name, err, p.logPath, tailFile(p.logPath, 30))
}

// waitFor polls check until it succeeds, ctx ends or timeout passes. It fails early if one
// of the watched processes exits; failures carry the tail of the watched processes' logs.
func waitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error, watched ...*process) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 3*time.Second)
		last := check(attempt)
		cancelAttempt()
		if last == nil {
			return nil
		}
		for _, p := range watched {
			if p.exited() {
				return p.failed(fmt.Errorf("exited (%v) while waiting for %s; last check: %v", p.err, what, last))
			}
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("%s not reached within %s: %v", what, timeout, last)
			if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				err = fmt.Errorf("waiting for %s: %w (last check: %v)", what, ctx.Err(), last)
			}
			for _, p := range watched {
				err = fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, p.logPath, tailFile(p.logPath, 30/len(watched)))
			}
			return err
		case <-tick.C:
		}
	}
}

// tailFile returns the last n lines of a file (at most 16 KiB).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxBytes = 16 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxBytes {
		_, _ = f.Seek(st.Size()-maxBytes, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
