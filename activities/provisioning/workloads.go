package provisioning

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// The install steps that run workloads in the host cluster: the namespace, etcd, the API server
// and its load balancer, the aggregated API server and the components, each with its wait.

// EnsureNamespace creates the namespace of the instance in a remote host cluster, with that
// cluster's kubeconfig, if it does not exist. In the local cluster it exists: the Karmada lives
// in it (so the worker needs no right on namespaces there).
func (a *Activities) EnsureNamespace(ctx context.Context, ref Ref) error {
	_, t, err := a.instance(ctx, ref)
	if err != nil || !t.remote {
		return err
	}
	_, err = t.kube.CoreV1().Namespaces().Get(ctx, ref.Namespace, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("reading namespace %s: %w", ref.Namespace, err)
		}
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}
	if _, err := t.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ref.Namespace, err)
	}
	return nil
}

// InstallEtcd applies the local etcd's Services, StatefulSet and PDB.
func (a *Activities) InstallEtcd(ctx context.Context, in InstallInput) error {
	k, t, err := a.instanceForPods(ctx, in.Ref)
	if err != nil {
		return err
	}
	// ValidateKarmada refused these already, for the object it read; the object read here may
	// be newer, and must not switch etcd or move its data either.
	problems, err := t.etcdProblems(ctx, k)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return temporal.NewNonRetryableApplicationError(strings.Join(problems, "; "), ErrValidation, nil)
	}
	if externalEtcd(k) {
		return t.removeComponent(ctx, k, Etcd) // what a local etcd left besides its StatefulSet
	}
	// etcd reloads its certificate and key files at every TLS handshake, so renewing them
	// needs no restart (a one-member etcd would be down meanwhile): its pods roll only when
	// its CA changes, which etcd loads once.
	etcdCerts, err := t.secretData(ctx, k, NamesFor(k.Name).Of(SuffixEtcdCert))
	if err != nil {
		return err
	}
	sts, services := EtcdObjects(k, hashOf(string(etcdCerts[KeyEtcdCACert])))
	for _, svc := range services {
		if _, err := a.apply(ctx, t.dyn, svc); err != nil {
			return err
		}
	}
	// An etcd whose data is in an emptyDir is never rolled: its new pods would start empty.
	// Its settings apply at install; a new image is refused (checkEtcdImage).
	existing, err := t.kube.AppsV1().StatefulSets(k.Namespace).Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading StatefulSet %s/%s: %w", k.Namespace, sts.Name, err)
	}
	if err != nil || !dataInEmptyDir(existing) {
		if _, err := a.apply(ctx, t.dyn, sts); err != nil {
			return err
		}
	}
	return t.ensurePDB(ctx, k, Etcd)
}

// WaitEtcdReady waits, heartbeating, until etcd has a Ready pod.
func (a *Activities) WaitEtcdReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(k *operatorv1alpha1.Karmada) []Component {
		if externalEtcd(k) {
			return nil
		}
		return []Component{Etcd}
	})
}

// InstallAPIServer applies the API server's Service, Deployment and PDB and returns the
// Service as the API server allocated it.
func (a *Activities) InstallAPIServer(ctx context.Context, in InstallInput) (ServiceInfo, error) {
	k, t, err := a.instanceForPods(ctx, in.Ref)
	if err != nil {
		return ServiceInfo{}, err
	}
	applied, err := a.apply(ctx, t.dyn, APIServerService(k))
	if err != nil {
		return ServiceInfo{}, err
	}
	var svc corev1.Service
	if err := kube.FromUnstructured(applied, &svc); err != nil {
		return ServiceInfo{}, err
	}
	if _, err := a.apply(ctx, t.dyn, APIServerDeployment(k, in.CertHash)); err != nil {
		return ServiceInfo{}, err
	}
	if err := t.ensurePDB(ctx, k, APIServer); err != nil {
		return ServiceInfo{}, err
	}
	info := ServiceInfo{Name: svc.Name, ServiceType: string(svc.Spec.Type), Port: APIServerPort}
	if len(svc.Spec.Ports) > 0 {
		info.NodePort = svc.Spec.Ports[0].NodePort
	}
	return info, nil
}

// WaitLoadBalancer waits, heartbeating, until the API server's LoadBalancer Service has an
// ingress address, and returns it. It never gives up: the workflow cancels it on a change.
func (a *Activities) WaitLoadBalancer(ctx context.Context, ref Ref) (string, error) {
	_, t, err := a.instance(ctx, ref)
	if err != nil {
		return "", err
	}
	name := NamesFor(ref.Name).Of(SuffixAPIServer)
	for {
		svc, err := t.kube.CoreV1().Services(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading Service %s/%s: %w", ref.Namespace, name, err)
		}
		if err == nil {
			if addrs := ingressAddresses(svc); len(addrs) > 0 {
				return addrs[0], nil
			}
		}
		if err := a.pause(ctx, "waiting for a load-balancer address on Service "+ref.Namespace+"/"+name); err != nil {
			return "", err
		}
	}
}

// CertifyLoadBalancer makes the API server certificate name the load-balancer address and
// rolls the API server if the certificate was re-issued.
func (a *Activities) CertifyLoadBalancer(ctx context.Context, in LoadBalancerInput) (Certificates, error) {
	k, t, err := a.instance(ctx, in.Ref)
	if err != nil {
		return Certificates{}, err
	}
	certs, err := t.ensureCertificates(ctx, k, []string{in.Address})
	if err != nil {
		return Certificates{}, err
	}
	if _, err := a.apply(ctx, t.dyn, APIServerDeployment(k, certs.CertHash)); err != nil {
		return Certificates{}, err
	}
	return certs, nil
}

// WaitAPIServerReady waits, heartbeating, until the API server has a Ready pod.
func (a *Activities) WaitAPIServerReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(*operatorv1alpha1.Karmada) []Component { return []Component{APIServer} })
}

// InstallAggregatedAPIServer applies karmada-aggregated-apiserver's Deployment, Service and PDB.
func (a *Activities) InstallAggregatedAPIServer(ctx context.Context, in InstallInput) error {
	k, t, err := a.instanceForPods(ctx, in.Ref)
	if err != nil {
		return err
	}
	kubeconfigHash, err := t.kubeconfigHash(ctx, k, AggregatedAPIServer)
	if err != nil {
		return err
	}
	d, svc := AggregatedAPIServerObjects(k, hashOf(in.CertHash, kubeconfigHash))
	if _, err := a.apply(ctx, t.dyn, svc); err != nil {
		return err
	}
	if _, err := a.apply(ctx, t.dyn, d); err != nil {
		return err
	}
	return t.ensurePDB(ctx, k, AggregatedAPIServer)
}

// WaitAggregatedAPIServerReady waits, heartbeating, until the aggregated API server has a
// Ready pod.
func (a *Activities) WaitAggregatedAPIServerReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, func(*operatorv1alpha1.Karmada) []Component { return []Component{AggregatedAPIServer} })
}

// InstallComponents applies the Deployment, Service and PDB of every component the spec
// installs, removes those of optional components it no longer names, and returns the names
// of the installed ones.
func (a *Activities) InstallComponents(ctx context.Context, in InstallInput) ([]string, error) {
	k, t, err := a.instanceForPods(ctx, in.Ref)
	if err != nil {
		return nil, err
	}
	var installed []string
	for _, c := range Components {
		if !Installed(k, c) {
			if err := t.removeComponent(ctx, k, c); err != nil {
				return nil, err
			}
			continue
		}
		if err := t.installComponent(ctx, k, c, in.CertHash); err != nil {
			return nil, err
		}
		installed = append(installed, c.Name)
	}
	return installed, nil
}

// WaitComponentsReady waits, heartbeating, until every installed component's rollout is
// complete.
func (a *Activities) WaitComponentsReady(ctx context.Context, ref Ref) error {
	return a.waitReady(ctx, ref, InstalledComponents)
}

// ensurePDB applies the PDB of c, or removes ours when the spec asks for none.
func (t *target) ensurePDB(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) error {
	if pdb := podDisruptionBudget(k, c); pdb != nil {
		_, err := t.a.apply(ctx, t.dyn, pdb)
		return err
	}
	return t.deleteOurs(ctx, k, pdbs, NamesFor(k.Name).Of(c.Suffix))
}
