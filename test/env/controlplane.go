package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	// ClusterSecretNamespace holds the Secrets with the members' credentials.
	ClusterSecretNamespace = "karmada-cluster"
	// ExecutionNamespacePrefix prefixes the per-member execution namespace (karmada-es-<member>).
	ExecutionNamespacePrefix = "karmada-es-"

	clusterCRDName   = "clusters.cluster.karmada.io"
	crdReadyTimeout  = 2 * time.Minute
	pollCRDsInterval = 100 * time.Millisecond
)

// ClusterGVR is the Karmada Cluster resource (cluster-scoped) in the control plane.
var ClusterGVR = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

// readCRDs reads every CustomResourceDefinition from the YAML files under dir.
func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if name == "kustomization.yaml" || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := decoder.Decode(crd); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("decode %s: %w", path, err)
			}
			if crd.Kind == "CustomResourceDefinition" {
				crds = append(crds, crd)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read CRDs from %s: %w", dir, err)
	}
	return crds, nil
}

// hostCRDName is the CRD the host cluster gets: the Karmada objects it provisions.
const hostCRDName = "karmadas.operator.karmada.io"

// installCRDs creates the CRDs that keep selects (nil: all) in cluster c and waits until all
// are Established.
func (e *Env) installCRDs(ctx context.Context, c *Cluster, keep func(name string) bool) (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	installed := map[string]*apiextensionsv1.CustomResourceDefinition{}
	if e.opts.CRDDir == "" {
		return installed, nil
	}
	all, err := readCRDs(e.opts.CRDDir)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if keep == nil || keep(crd.Name) {
			crds = append(crds, crd)
		}
	}
	return createCRDs(ctx, c, crds)
}

// createCRDs creates crds in cluster c (an existing one is left as it is) and waits until all
// are Established.
func createCRDs(ctx context.Context, c *Cluster, crds []*apiextensionsv1.CustomResourceDefinition) (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	installed := map[string]*apiextensionsv1.CustomResourceDefinition{}
	client, err := apiextensions.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, err
	}
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if _, err := crdClient.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create CRD %s in cluster %s: %w", crd.Name, c.Name, err)
		}
		installed[crd.Name] = crd
	}

	deadline := time.Now().Add(crdReadyTimeout)
	for _, crd := range crds {
		for {
			got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err == nil && crdEstablished(got) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("CRD %s not Established in cluster %s within %s (last error: %v)", crd.Name, c.Name, crdReadyTimeout, err)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pollCRDsInterval):
			}
		}
	}
	return installed, nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// registerMembers makes the control plane know every member the way Karmada's push mode does:
// a Secret with the member's token and CA, its execution namespace and a Cluster object, to
// which the Secret is then bound.
func (e *Env) registerMembers(ctx context.Context, crds map[string]*apiextensionsv1.CustomResourceDefinition) error {
	cp := e.ControlPlane.Client()
	if err := createNamespace(ctx, cp, ClusterSecretNamespace); err != nil {
		return fmt.Errorf("cluster %s: %w", e.ControlPlane.Name, err)
	}
	clusterCRD := crds[clusterCRDName]
	if clusterCRD == nil && !e.opts.BesideKarmada {
		e.logf("env: WARNING: CRD %s not found in %q; members get Secrets and namespaces but no Cluster objects", clusterCRDName, e.opts.CRDDir)
	}
	for _, m := range e.Members {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: ClusterSecretNamespace},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"token": []byte(m.token), "caBundle": m.caPEM},
		}
		if _, err := cp.CoreV1().Secrets(ClusterSecretNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Secret %s/%s for member %s: %w", ClusterSecretNamespace, m.Name, m.Name, err)
		}
		if err := createNamespace(ctx, cp, ExecutionNamespacePrefix+m.Name); err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		switch {
		case e.opts.BesideKarmada:
			if err := e.joinCluster(ctx, m, secret); err != nil {
				return err
			}
		case clusterCRD != nil:
			if err := e.createClusterObject(ctx, m, clusterCRD, secret); err != nil {
				return err
			}
		}
	}
	if e.opts.BesideKarmada {
		return e.waitClustersReady(ctx)
	}
	return nil
}

// clusterSpec is the spec of member m's Cluster in Push mode, with the Secret registerMembers
// creates; withID adds spec.id, the UID of the member's kube-system namespace, by which
// Karmada identifies a member.
func clusterSpec(ctx context.Context, m *Cluster, withID bool) (map[string]any, error) {
	spec := map[string]any{
		"apiEndpoint": m.Server,
		"syncMode":    "Push",
		"secretRef":   map[string]any{"namespace": ClusterSecretNamespace, "name": m.Name},
	}
	if withID {
		ns, err := m.Client().CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read kube-system of member %s: %w", m.Name, err)
		}
		spec["id"] = string(ns.UID)
	}
	return spec, nil
}

func (e *Env) createClusterObject(ctx context.Context, m *Cluster, crd *apiextensionsv1.CustomResourceDefinition, secret *corev1.Secret) error {
	version := crdVersion(crd, ClusterGVR.Version)
	if version == nil {
		return fmt.Errorf("CRD %s does not serve %s", crd.Name, ClusterGVR.Version)
	}
	spec, err := clusterSpec(ctx, m, schemaHasSpecField(version, "id"))
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": m.Name},
		"spec":       spec,
	}}
	clusters := e.ControlPlane.Dynamic().Resource(ClusterGVR)
	created, err := clusters.Create(ctx, obj, metav1.CreateOptions{FieldManager: "karmadaflow-env"})
	if err != nil {
		return fmt.Errorf("create Cluster %s in cluster %s: %w", m.Name, e.ControlPlane.Name, err)
	}
	if err := BindCredentials(ctx, e.ControlPlane.Client(), created, secret); err != nil {
		return err
	}
	if version.Subresources == nil || version.Subresources.Status == nil {
		return nil
	}
	conditions := []any{map[string]any{
		"type":               "Ready",
		"status":             "True",
		"reason":             "ClusterReady",
		"message":            "cluster is healthy and ready to accept workloads",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}
	if err := unstructured.SetNestedSlice(created.Object, conditions, "status", "conditions"); err != nil {
		return err
	}
	if _, err := clusters.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "karmadaflow-env"}); err != nil {
		return fmt.Errorf("set Ready condition of Cluster %s: %w", m.Name, err)
	}
	return nil
}

// BindCredentials makes each Secret (of ClusterSecretNamespace) bound to cluster, as `karmadactl
// join` leaves the Secrets it creates: with an ownerReference to the Cluster, without which
// karmadaflow sends no member its token. A Secret missing (the garbage collector removes it
// with its Cluster) is created again from the one given.
func BindCredentials(ctx context.Context, cp kubernetes.Interface, cluster *unstructured.Unstructured, secrets ...*corev1.Secret) error {
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(cluster, cluster.GroupVersionKind())}
	for _, s := range secrets {
		secretsAPI := cp.CoreV1().Secrets(ClusterSecretNamespace)
		bound := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ClusterSecretNamespace, OwnerReferences: owner}, Type: s.Type, Data: s.Data}
		_, err := secretsAPI.Create(ctx, bound, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				current, err := secretsAPI.Get(ctx, s.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				current.OwnerReferences = owner
				_, err = secretsAPI.Update(ctx, current, metav1.UpdateOptions{})
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("bind Secret %s/%s to Cluster %s: %w", ClusterSecretNamespace, s.Name, cluster.GetName(), err)
		}
	}
	return nil
}

func crdVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == name && v.Served {
			return v
		}
	}
	return nil
}

func schemaHasSpecField(v *apiextensionsv1.CustomResourceDefinitionVersion, field string) bool {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return false
	}
	spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if !ok {
		return false
	}
	_, ok = spec.Properties[field]
	return ok
}
