package searchapi

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	extensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/deploy/crds"
)

// registrySchema is the ResourceRegistry CRD's schema of v1alpha1: objects are validated by
// it, and it is the OpenAPI model published for them, so that the CRD of the direct mode
// and this server accept the same objects.
type registrySchema struct {
	validator validation.SchemaValidator
	model     *spec.Schema
}

func loadRegistrySchema() (*registrySchema, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crds.ResourceRegistry, &crd); err != nil {
		return nil, fmt.Errorf("the ResourceRegistry CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != searchv1alpha1.GroupVersion.Version || v.Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return nil, err
		}
		validator, model, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return nil, fmt.Errorf("the ResourceRegistry CRD's schema: %w", err)
		}
		return &registrySchema{validator: validator, model: model}, nil
	}
	return nil, fmt.Errorf("the ResourceRegistry CRD has no schema for %s", searchv1alpha1.GroupVersion.Version)
}

// definitions are the OpenAPI models of the served types: the meta types, as the
// apiextensions API server publishes them, and ResourceRegistry from its CRD's schema.
func (s *registrySchema) definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := extensionsopenapi.GetOpenAPIDefinitions(ref)
	objectMeta, listMeta := metav1.ObjectMeta{}.OpenAPIModelName(), metav1.ListMeta{}.OpenAPIModelName()
	registry := *s.model
	registry.Properties = map[string]spec.Schema{}
	for name, p := range s.model.Properties {
		registry.Properties[name] = p
	}
	registry.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(objectMeta)}}
	name := searchv1alpha1.ResourceRegistry{}.OpenAPIModelName()
	defs[name] = common.OpenAPIDefinition{Schema: registry, Dependencies: []string{objectMeta}}
	defs[searchv1alpha1.ResourceRegistryList{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Type:     []string{"object"},
			Required: []string{"items"},
			Properties: map[string]spec.Schema{
				"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(listMeta)}},
				"items": {SchemaProps: spec.SchemaProps{Type: []string{"array"},
					Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(name)}}}}},
			},
		}},
		Dependencies: []string{listMeta, name},
	}
	defs[ProxyOptions{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Type: []string{"object"},
			Properties: map[string]spec.Schema{
				"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"path":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
			},
		}},
	}
	return defs
}

// OpenAPIModelName names ProxyOptions in the OpenAPI document.
func (ProxyOptions) OpenAPIModelName() string { return "io.karmada.search.v1alpha1.ProxyOptions" }
