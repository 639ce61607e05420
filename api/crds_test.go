package api_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// TestGeneratedCRDs checks the CRDs in deploy/crds against the types of the api packages and
// the properties the specs ask for (status subresources, short name, printer columns, the
// MultiClusterService rules). Run `make generate` when it fails after a change of api/.
func TestGeneratedCRDs(t *testing.T) {
	s := scheme(t)
	files, err := filepath.Glob(filepath.Join("..", "deploy", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("decode %s: %v", file, err)
		}
		crds[crd.Name] = crd
		for _, version := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.Kind}
			if !s.Recognizes(gvk) {
				t.Errorf("%s: %s has no Go type in api/", file, gvk)
			}
			if version.Subresources == nil || version.Subresources.Status == nil {
				t.Errorf("%s: %s has no status subresource", file, gvk)
			}
		}
	}
	for _, name := range []string{
		"multiclusterservices.networking.karmada.io",
		"works.work.karmada.io",
		"clusters.cluster.karmada.io",
		"resourceregistries.search.karmada.io",
		"karmadas.operator.karmada.io",
	} {
		if crds[name] == nil {
			t.Errorf("deploy/crds has no CRD %s", name)
		}
	}

	if mcs := crds["multiclusterservices.networking.karmada.io"]; mcs != nil {
		if !slices.Contains(mcs.Spec.Names.ShortNames, "mcs") {
			t.Errorf("MultiClusterService short names %v lack mcs", mcs.Spec.Names.ShortNames)
		}
		root := mcs.Spec.Versions[0].Schema.OpenAPIV3Schema
		if len(root.XValidations) == 0 {
			t.Error("MultiClusterService has no CEL rule on the object (metadata.name)")
		}
		types := root.Properties["spec"].Properties["types"]
		var transition bool
		for _, rule := range types.XValidations {
			transition = transition || rule.Rule == "self == oldSelf"
		}
		if !transition {
			t.Error("spec.types of MultiClusterService has no immutability rule")
		}
	}
	if karmada := crds["karmadas.operator.karmada.io"]; karmada != nil {
		var ready bool
		for _, column := range karmada.Spec.Versions[0].AdditionalPrinterColumns {
			ready = ready || (column.Name == "READY" && column.JSONPath == `.status.conditions[?(@.type=="Ready")].status`)
		}
		if !ready {
			t.Error("Karmada has no READY printer column from the Ready condition")
		}
	}
}
