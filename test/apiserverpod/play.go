package apiserverpod

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// playInterval is how often Play looks for API server Services to serve.
const playInterval = time.Second

// Play is the kubelet of every NodePort Karmada instance's API server pod in the host cluster
// until ctx ends: once the instance's API server Service has a node port and its cert Secret
// exists, an API server runs on it; when the Service is gone, it is stopped. A server that
// exits is started again. logf reports what it does.
func Play(ctx context.Context, e *env.Env, logf func(format string, args ...any)) {
	running := map[string]*Server{} // by "<namespace>/<service>"
	defer func() {
		for _, s := range running {
			s.Stop()
		}
	}()
	selector := prov.LabelManagedBy + "=" + prov.ManagedBy + "," + prov.LabelName + "=" + prov.APIServer.Name
	_ = wait.PollUntilContextCancel(ctx, playInterval, true, func(ctx context.Context) (bool, error) {
		services, err := e.Host.Client().CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil // the host is restarting or ctx ended: next round
		}
		wanted := map[string]bool{}
		for _, svc := range services.Items {
			port := nodePort(svc)
			if port == 0 || svc.DeletionTimestamp != nil {
				continue
			}
			key := svc.Namespace + "/" + svc.Name
			wanted[key] = true
			if s := running[key]; s != nil && !s.Exited() {
				continue
			}
			instance := svc.Labels[prov.LabelInstance]
			s, err := Start(ctx, e, svc.Namespace, instance, port)
			if err != nil {
				if !apierrors.IsNotFound(err) {
					logf("apiserverpod: %s: %v", key, err)
				}
				continue
			}
			running[key] = s
			logf("apiserverpod: API server of Karmada %s/%s serving on %s:%d (log %s)", svc.Namespace, instance, e.Host.NodeIP, port, s.LogPath)
		}
		for key, s := range running {
			if !wanted[key] {
				s.Stop()
				delete(running, key)
				logf("apiserverpod: stopped the API server of %s", key)
			}
		}
		return false, nil
	})
}

func nodePort(svc corev1.Service) int32 {
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) == 0 {
		return 0
	}
	return svc.Spec.Ports[0].NodePort
}

// Exited reports whether the API server process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}
