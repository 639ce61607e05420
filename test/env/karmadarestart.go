package env

import (
	"context"
	"errors"
	"fmt"
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
	args := append(k.controllerManagerArgs(e.ControlPlane.Kubeconfig, controllers), extraArgs...)
	if err := e.restartKarmadaControllerManager(ctx, args); err != nil {
		return err
	}
	e.opts.KarmadaControllers = controllers
	return nil
}

// restartKarmadaControllerManager stops karmada-controller-manager and starts it again with
// args (nil: the flags it ran with), on the same health port and log file, returning once the
// new one answers /healthz.
func (e *Env) restartKarmadaControllerManager(ctx context.Context, args []string) error {
	k := e.karmada
	i := -1
	for j, p := range k.procs {
		if p.name == binKarmadaCM {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("%s was never started", binKarmadaCM)
	}
	if args == nil {
		args = k.procs[i].args
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
	p, err := e.startProcess(binKarmadaCM, binKarmadaCM, args, k.dir, tierComponent, k.controllerManagerPort)
	if err != nil {
		return err
	}
	k.procs[i] = p
	if err := k.waitHealthy(ctx, "restarted "+binKarmadaCM, k.controllerManagerPort, p); err != nil {
		return err
	}
	e.phase(binKarmadaCM+" restarted", begin)
	return nil
}
