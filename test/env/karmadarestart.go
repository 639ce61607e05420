package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// RestartKarmadaControllerManager stops the running karmada-controller-manager (Options
// BesideKarmada) and starts it again with --controllers=controllers (empty means
// DefaultKarmadaControllers), otherwise the same flags plus extraArgs, on the same health
// port and log file. It returns once the new one answers /healthz, e.g. to compare
// karmadaflow's MultiClusterService with Karmada's own in the same environment: controllers
// "*" and extraArgs "--feature-gates=MultiClusterService=true" (Karmada's MultiClusterService
// controllers are behind that alpha feature gate, off by default, even when listed).
func (e *Env) RestartKarmadaControllerManager(ctx context.Context, controllers string, extraArgs ...string) error {
	k := e.karmada
	if k == nil {
		return errors.New("no Karmada components: the environment does not run BesideKarmada")
	}
	if controllers == "" {
		controllers = DefaultKarmadaControllers
	}
	i := -1
	for j, p := range k.procs {
		if p.name == binKarmadaCM {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("%s was never started", binKarmadaCM)
	}
	begin := time.Now()
	if err := k.procs[i].stop(stopGrace); err != nil {
		return err
	}
	e.mu.Lock()
	stopping := e.stopping
	e.mu.Unlock()
	if stopping {
		return errors.New("the environment is stopping")
	}
	args := append(k.controllerManagerArgs(e.ControlPlane.Kubeconfig, controllers), extraArgs...)
	p, err := e.startProcess(binKarmadaCM, binKarmadaCM, args, k.dir, tierComponent, k.controllerManagerPort)
	if err != nil {
		return err
	}
	k.procs[i] = p
	e.opts.KarmadaControllers = controllers
	healthz := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.controllerManagerPort)) + "/healthz"
	if err := waitFor(ctx, karmadaReadyTimeout, "/healthz of restarted "+binKarmadaCM, func(ctx context.Context) error {
		return k.get(ctx, healthz)
	}, p); err != nil {
		return err
	}
	e.phase(binKarmadaCM+" restarted with --controllers="+controllers, begin)
	return nil
}
