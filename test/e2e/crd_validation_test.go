package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// TestMultiClusterServiceCRDValidation checks that the control plane's API server, with the
// CRDs of deploy/crds installed, refuses every MultiClusterService that breaks a validation
// rule of spec/mcs.md, with an Invalid error naming the field, accepts a valid one, and
// refuses changing spec.types after creation.
func TestMultiClusterServiceCRDValidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := testEnv.ControlPlane.Dynamic()
	namespace := createValidationNamespace(ctx, t, client, "crd-validation")
	mcsClient := client.Resource(networkingv1alpha1.MultiClusterServiceGVR).Namespace(namespace)

	longName := strings.Repeat("a", 49)
	cases := []struct {
		rule  string
		name  string
		spec  map[string]any
		field string // the error message must name it
	}{
		{
			rule: "name is a DNS-1035 label (starts with a letter)",
			name: "1foo", spec: mcsSpecCrossCluster(), field: "metadata.name",
		},
		{
			rule: "name is a DNS-1035 label (no dots)",
			name: "foo.bar", spec: mcsSpecCrossCluster(), field: "metadata.name",
		},
		{
			rule: "types is required",
			name: "no-types", spec: map[string]any{}, field: "spec.types",
		},
		{
			rule: "types is not empty",
			name: "empty-types", spec: map[string]any{"types": []any{}}, field: "spec.types",
		},
		{
			rule: "each type is CrossCluster or LoadBalancer",
			name: "bad-type", spec: map[string]any{"types": []any{"NodePort"}}, field: "spec.types[0]",
		},
		{
			rule: "at most one distinct type",
			name: "two-types", spec: map[string]any{"types": []any{"CrossCluster", "LoadBalancer"}}, field: "spec.types",
		},
		{
			rule: "port is at least 1",
			name: "port-zero", spec: mcsSpecWithPorts(map[string]any{"port": int64(0)}), field: "spec.ports[0].port",
		},
		{
			rule: "port is at most 65535",
			name: "port-too-big", spec: mcsSpecWithPorts(map[string]any{"port": int64(65536)}), field: "spec.ports[0].port",
		},
		{
			rule: "port name is a DNS-1123 label",
			name: "bad-port-name", spec: mcsSpecWithPorts(map[string]any{"name": "Http_1", "port": int64(80)}), field: "spec.ports[0].name",
		},
		{
			rule: "port names are unique among named ports",
			name: "dup-port-name",
			spec: mcsSpecWithPorts(
				map[string]any{"name": "http", "port": int64(80)},
				map[string]any{"name": "http", "port": int64(8080)},
			),
			field: "spec.ports",
		},
		{
			rule: "provider cluster name is non-empty",
			name: "empty-provider", spec: mcsSpecWithClusters("providerClusters", map[string]any{"name": ""}), field: "spec.providerClusters[0].name",
		},
		{
			rule: "provider cluster name is present",
			name: "no-provider-name", spec: mcsSpecWithClusters("providerClusters", map[string]any{}), field: "spec.providerClusters[0].name",
		},
		{
			rule: "consumer cluster name is a DNS-1123 label",
			name: "bad-consumer", spec: mcsSpecWithClusters("consumerClusters", map[string]any{"name": "Member_1"}), field: "spec.consumerClusters[0].name",
		},
		{
			rule: "consumer cluster name has at most 48 characters",
			name: "long-consumer", spec: mcsSpecWithClusters("consumerClusters", map[string]any{"name": longName}), field: "spec.consumerClusters[0].name",
		},
		{
			rule: "serviceProvisionClusters names are DNS-1123 labels",
			name: "bad-provision", spec: mcsSpecWithClusters("serviceProvisionClusters", "member.1"), field: "spec.serviceProvisionClusters[0]",
		},
		{
			rule: "serviceConsumptionClusters names have at most 48 characters",
			name: "long-consumption", spec: mcsSpecWithClusters("serviceConsumptionClusters", "member1", longName), field: "spec.serviceConsumptionClusters[1]",
		},
		{
			rule: "range.clusterNames names are non-empty",
			name: "empty-range",
			spec: map[string]any{
				"types": []any{"CrossCluster"},
				"range": map[string]any{"clusterNames": []any{""}},
			},
			field: "spec.range.clusterNames[0]",
		},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			_, err := mcsClient.Create(ctx, unstructuredMCS(namespace, tc.name, tc.spec), metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("MultiClusterService %s/%s was accepted, want it refused because %s", namespace, tc.name, tc.rule)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create MultiClusterService %s/%s: got %v, want an Invalid error", namespace, tc.name, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("create MultiClusterService %s/%s: error %q does not name %s", namespace, tc.name, err, tc.field)
			}
		})
	}

	t.Run("a valid MultiClusterService is accepted and its types cannot change", func(t *testing.T) {
		spec := map[string]any{
			"types": []any{"CrossCluster"},
			"ports": []any{
				map[string]any{"name": "http", "port": int64(80)},
				map[string]any{"port": int64(8080)},
				map[string]any{"port": int64(8443)},
			},
			"providerClusters":           []any{map[string]any{"name": "member1"}},
			"consumerClusters":           []any{map[string]any{"name": "member2"}, map[string]any{"name": strings.Repeat("m", 48)}},
			"serviceProvisionClusters":   []any{"member1"},
			"serviceConsumptionClusters": []any{"member2"},
			"range":                      map[string]any{"clusterNames": []any{"member1", "member2"}},
		}
		created, err := mcsClient.Create(ctx, unstructuredMCS(namespace, "foo", spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create valid MultiClusterService %s/foo: %v", namespace, err)
		}

		changed := created.DeepCopy()
		if err := unstructured.SetNestedSlice(changed.Object, []any{"LoadBalancer"}, "spec", "types"); err != nil {
			t.Fatal(err)
		}
		_, err = mcsClient.Update(ctx, changed, metav1.UpdateOptions{})
		if err == nil {
			t.Fatalf("changing spec.types of MultiClusterService %s/foo was accepted, want it refused", namespace)
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.types") {
			t.Fatalf("change spec.types of MultiClusterService %s/foo: got %v, want an Invalid error naming spec.types", namespace, err)
		}

		// Other fields stay mutable.
		if err := unstructured.SetNestedSlice(created.Object, []any{map[string]any{"name": "member3"}}, "spec", "consumerClusters"); err != nil {
			t.Fatal(err)
		}
		if _, err := mcsClient.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("change spec.consumerClusters of MultiClusterService %s/foo: %v", namespace, err)
		}
	})
}

func mcsSpecCrossCluster() map[string]any { return map[string]any{"types": []any{"CrossCluster"}} }

func mcsSpecWithPorts(ports ...map[string]any) map[string]any {
	spec := mcsSpecCrossCluster()
	list := make([]any, len(ports))
	for i, p := range ports {
		list[i] = p
	}
	spec["ports"] = list
	return spec
}

func mcsSpecWithClusters(field string, clusters ...any) map[string]any {
	spec := mcsSpecCrossCluster()
	spec[field] = clusters
	return spec
}

func unstructuredMCS(namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": networkingv1alpha1.GroupVersion.String(),
		"kind":       networkingv1alpha1.KindMultiClusterService,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

// createValidationNamespace creates a namespace named after prefix in the control plane, removed
// when the test ends.
func createValidationNamespace(ctx context.Context, t *testing.T, client dynamic.Interface, prefix string) string {
	t.Helper()
	namespaces := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"generateName": prefix + "-"},
	}}
	created, err := namespaces.Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s-* in the control plane: %v", prefix, err)
	}
	name := created.GetName()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := namespaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// A Cluster's name becomes the execution namespace karmada-es-<name> and label values: the
// control plane refuses one longer than 48 characters, as Karmada's own validation does
// (standalone: the CRD's rule; beside Karmada: karmada-aggregated-apiserver).
func TestClusterNameLongerThan48IsRefused(t *testing.T) {
	for _, name := range []string{strings.Repeat("c", 49), strings.Repeat("c", 70)} {
		cluster := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"},
		}}
		_, err := testEnv.ControlPlane.Dynamic().Resource(schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}).
			Create(context.Background(), cluster, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "48") {
			t.Errorf("a Cluster named with %d characters: want an Invalid error naming the limit of 48, got %v", len(name), err)
		}
	}
}
