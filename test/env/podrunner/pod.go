package podrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pod is one played pod: its address, directory, volumes and containers.
type pod struct {
	r         *Runner
	key       string // namespace/name
	namespace string
	name      string
	uid       types.UID
	dir       string // <Dir>/<namespace>/<name>
	addr      podAddress
	hostname  string
	subdomain string
	startTime metav1.Time

	ctx    context.Context // ends when the pod's processes are to stop
	cancel context.CancelFunc
	kill   chan struct{} // closed when the grace period is over: SIGKILL
	killer sync.Once
	wg     sync.WaitGroup // the container loops

	mu          sync.Mutex
	obj         *corev1.Pod // the latest object seen
	volumeErr   error       // why the volumes could not be written, if so
	launched    bool        // the container loops run
	terminating bool
	tokens      map[string]token // service-account tokens of projected volumes, by file
	containers  []*container
}

func newPod(r *Runner, obj *corev1.Pod, addr podAddress) (*pod, error) {
	p := &pod{
		r:         r,
		key:       obj.Namespace + "/" + obj.Name,
		namespace: obj.Namespace,
		name:      obj.Name,
		uid:       obj.UID,
		dir:       filepath.Join(r.opts.Dir, obj.Namespace, obj.Name),
		addr:      addr,
		hostname:  podHostname(obj),
		subdomain: obj.Spec.Subdomain,
		startTime: now(),
		kill:      make(chan struct{}),
		obj:       obj,
		tokens:    map[string]token{},
	}
	// A pod restarted by an earlier runner keeps its start time.
	if obj.Status.StartTime != nil {
		p.startTime = *obj.Status.StartTime
	}
	p.ctx, p.cancel = context.WithCancel(r.ctx)
	for _, spec := range obj.Spec.Containers {
		p.containers = append(p.containers, newContainer(p, spec))
	}
	if err := os.MkdirAll(filepath.Join(p.dir, "volumes"), 0o755); err != nil {
		return nil, fmt.Errorf("pod directory: %w", err)
	}
	return p, nil
}

// podHostname is the pod's hostname as the kubelet sets it: spec.hostname or the pod name,
// at most 63 characters.
func podHostname(obj *corev1.Pod) string {
	name := obj.Spec.Hostname
	if name == "" {
		name = obj.Name
	}
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name
}

// refresh takes the latest object, writes the volumes (new Secret and ConfigMap data
// included) and launches the containers once the volumes are complete.
func (p *pod) refresh(obj *corev1.Pod) {
	err := p.writeVolumes(obj)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.obj = obj
	if err != nil && (p.volumeErr == nil || p.volumeErr.Error() != err.Error()) {
		p.r.logf("pod %s: volumes: %v", p.key, err)
	}
	p.volumeErr = err
	if err != nil || p.launched || p.terminating {
		return
	}
	p.launched = true
	for _, c := range p.containers {
		p.wg.Go(func() { c.run(p.ctx) })
	}
}

// object returns the latest object seen.
func (p *pod) object() *corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.obj
}

// markTerminating reports whether the pod just started terminating.
func (p *pod) markTerminating() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminating {
		return false
	}
	p.terminating = true
	return true
}

func (p *pod) isTerminating() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.terminating
}

// gracePeriod is the pod's terminationGracePeriodSeconds (30 s by default).
func (p *pod) gracePeriod() time.Duration {
	if s := p.object().Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return 30 * time.Second
}

// stop ends the pod's processes, SIGTERM first and SIGKILL once grace has passed, and waits
// for them. A later call with a shorter grace period shortens the wait.
func (p *pod) stop(grace time.Duration) {
	p.cancel()
	t := time.AfterFunc(grace, func() { p.killer.Do(func() { close(p.kill) }) })
	defer t.Stop()
	p.wg.Wait()
}

// ready reports whether every container is ready and the pod is not terminating: whether it
// is an endpoint of its Services.
func (p *pod) ready() bool {
	if p.isTerminating() {
		return false
	}
	for _, c := range p.containers {
		if !c.snapshot().ready {
			return false
		}
	}
	return true
}

// hostsFile is the pod's /etc/hosts.
func (p *pod) hostsFile() string { return filepath.Join(p.dir, "etc-hosts") }

// now is the current time as the API stores it (whole seconds), so that a status written
// compares equal to the one read back.
func now() metav1.Time { return metav1.Unix(time.Now().Unix(), 0) }
