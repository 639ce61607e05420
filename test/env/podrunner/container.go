package podrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Restart backoff: the kubelet waits 10 s after the first exit, doubling up to 5 minutes, and
// forgets the backoff after a run of 10 minutes. The first wait is 1 s here so that a
// restarted process is back within a test's patience.
const (
	restartBackoffInitial = time.Second
	restartBackoffCap     = 5 * time.Minute
	restartBackoffReset   = 10 * time.Minute
)

func newRestartBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: restartBackoffInitial, Factor: 2, Steps: 1 << 30, Cap: restartBackoffCap}
}

// container is one container of a played pod: its process, restarted whenever it exits,
// and what its status says.
type container struct {
	pod     *pod
	spec    corev1.Container
	logPath string

	mu sync.Mutex
	st containerState
}

// containerState is what a container's status is made of.
type containerState struct {
	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	ready    bool
	started  bool
	id       string // "karmadaflow://<pid>"
	imageID  string // the binary that ran
}

func newContainer(p *pod, spec corev1.Container) *container {
	return &container{
		pod:     p,
		spec:    spec,
		logPath: filepath.Join(p.r.opts.Dir, "logs", fmt.Sprintf("%s_%s_%s.log", p.namespace, p.name, spec.Name)),
		st:      containerState{state: waiting("ContainerCreating", "")},
	}
}

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func (c *container) snapshot() containerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// update changes the container's state and has the pod's status written.
func (c *container) update(change func(*containerState)) {
	c.mu.Lock()
	change(&c.st)
	c.mu.Unlock()
	c.pod.r.changed(c.pod)
}

// run starts the container's process and restarts it with backoff whenever it exits, until
// ctx ends; then it stops the process within the pod's grace period.
func (c *container) run(ctx context.Context) {
	backoff := newRestartBackoff()
	ranBefore := false
	lastErr := ""
	for {
		if proc, err := c.start(ranBefore); err != nil {
			if err.Error() != lastErr { // retried with backoff: said once
				c.pod.r.logf("pod %s container %s: %v", c.pod.key, c.spec.Name, err)
				lastErr = err.Error()
			}
		} else {
			lastErr = ""
			ranBefore = true
			began := time.Now()
			c.watch(ctx, proc)
			if time.Since(began) > restartBackoffReset {
				backoff = newRestartBackoff()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
	}
}

// start starts the process, the status saying why not when it cannot.
func (c *container) start(restart bool) (*process, error) {
	obj := c.pod.object()
	bin, err := c.binary()
	if err != nil {
		c.update(func(s *containerState) { s.state = waiting("ErrImagePull", err.Error()) })
		return nil, err
	}
	x, argv, err := c.command(obj, bin)
	if err != nil {
		c.update(func(s *containerState) { s.state = waiting("CreateContainerConfigError", err.Error()) })
		return nil, err
	}
	proc, err := c.pod.r.startProcess(processSpec{
		argv: argv, env: x.env, dir: x.workDir, logPath: c.logPath,
		hostsFile: c.pod.hostsFile(), hostname: c.pod.hostname,
	})
	if err != nil {
		c.update(func(s *containerState) { s.state = waiting("RunContainerError", err.Error()) })
		return nil, err
	}
	c.update(func(s *containerState) {
		if restart {
			s.restarts++
		}
		s.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now()}}
		s.started = true
		s.ready = c.spec.ReadinessProbe == nil
		s.id = fmt.Sprintf("karmadaflow://%d", proc.pid())
		s.imageID = "file://" + bin
	})
	return proc, nil
}

// watch probes the running process until it exits or ctx ends (then it stops it), and
// records how it ended.
func (c *container) watch(ctx context.Context, proc *process) {
	probeCtx, stopProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	if c.spec.ReadinessProbe != nil {
		probes.Go(func() { c.probeReadiness(probeCtx, proc) })
	}
	select {
	case <-proc.done:
	case <-ctx.Done():
		proc.stop(c.pod.kill)
	}
	stopProbes()
	probes.Wait()
	ended := proc.termination()
	c.update(func(s *containerState) {
		s.ready = false
		if running := s.state.Running; running != nil {
			ended.StartedAt = running.StartedAt
		}
		if ctx.Err() != nil {
			s.state = corev1.ContainerState{Terminated: ended}
			return
		}
		s.last = corev1.ContainerState{Terminated: ended}
		s.state = waiting("CrashLoopBackOff", fmt.Sprintf("back-off restarting failed container %s in pod %s", c.spec.Name, c.pod.key))
	})
}

// binary is the binary the image stands for: <BinDir>/<basename of the image repository>.
func (c *container) binary() (string, error) {
	name := c.spec.Image
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexAny(name, ":@"); i >= 0 {
		name = name[:i]
	}
	bin := filepath.Join(c.pod.r.opts.BinDir, name)
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("no binary %s for image %s", bin, c.spec.Image)
	}
	return bin, nil
}

// execContext is what the container's processes run with: variables for $(VAR)
// references, environment, mount paths and working directory.
type execContext struct {
	vars    map[string]string
	env     []string
	mounts  pathMap
	workDir string
}

func (c *container) execContext(obj *corev1.Pod) (execContext, error) {
	vars, names, err := c.environment(obj)
	if err != nil {
		return execContext{}, err
	}
	mounts, err := c.pod.mounts(c.spec)
	if err != nil {
		return execContext{}, err
	}
	// What images commonly set, then the container's variables, with mount paths rewritten.
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + c.pod.hostname,
		"HOME=" + c.pod.dir,
	}
	for _, name := range names {
		env = append(env, name+"="+mounts.rewrite(vars[name]))
	}
	workDir := c.pod.dir
	if c.spec.WorkingDir != "" {
		workDir = mounts.rewrite(c.spec.WorkingDir)
		if workDir == c.spec.WorkingDir {
			// Not inside a volume: a directory of the pod's stands for it.
			workDir = filepath.Join(c.pod.dir, "workdir", c.spec.Name)
		}
		if err := os.MkdirAll(workDir, 0o755); err != nil {
			return execContext{}, err
		}
	}
	return execContext{vars: vars, env: env, mounts: mounts, workDir: workDir}, nil
}

// argv is bin followed by args with $(VAR)s expanded and mount paths rewritten into the
// pod's directory.
func (x execContext) argv(bin string, args []string) []string {
	argv := []string{bin}
	for _, a := range args {
		argv = append(argv, x.mounts.rewrite(expand(a, envLookup(x.vars))))
	}
	return argv
}

// command is the container's process: command and args as written, the binary as argv[0]
// (the image's entrypoint is taken to be the binary when there is no command).
func (c *container) command(obj *corev1.Pod, bin string) (execContext, []string, error) {
	x, err := c.execContext(obj)
	if err != nil {
		return execContext{}, nil, err
	}
	args := c.spec.Args
	if len(c.spec.Command) > 0 {
		args = append(append([]string{}, c.spec.Command[1:]...), c.spec.Args...)
	}
	return x, x.argv(bin, args), nil
}

// environment is the container's variables as the kubelet computes them: envFrom first,
// then env, each value expanded with the variables defined before it. names keeps the
// order of definition.
func (c *container) environment(obj *corev1.Pod) (vars map[string]string, names []string, err error) {
	vars = map[string]string{}
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			names = append(names, name)
		}
		vars[name] = value
	}
	for _, from := range c.spec.EnvFrom {
		data, err := c.pod.envSource(from)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.spec.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, envLookup(vars)))
			continue
		}
		value, err := c.pod.envValue(obj, c.spec, e.ValueFrom)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		set(e.Name, value)
	}
	return vars, names, nil
}

// errOptionalMissing marks an optional Secret or ConfigMap (key) that does not exist.
var errOptionalMissing = errors.New("optional source missing")
