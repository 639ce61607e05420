package searchapi

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// registryStorage is the etcd storage of ResourceRegistries and of their status subresource.
func registryStorage(schema *registrySchema, options generic.RESTOptionsGetter) (*genericregistry.Store, *statusREST, error) {
	strategy := registryStrategy{ObjectTyper: Scheme, NameGenerator: names.SimpleNameGenerator, schema: schema}
	resource := searchv1alpha1.Resource(searchv1alpha1.ResourceResourceRegistry)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &searchv1alpha1.ResourceRegistry{} },
		NewListFunc:               func() runtime.Object { return &searchv1alpha1.ResourceRegistryList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: searchv1alpha1.Resource("resourceregistry"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		ResetFieldsStrategy:       strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: options}); err != nil {
		return nil, nil, err
	}
	status := *store
	status.UpdateStrategy = statusStrategy{strategy}
	status.ResetFieldsStrategy = statusStrategy{strategy}
	return store, &statusREST{store: &status}, nil
}

// statusREST serves resourceregistries/status: get and update only.
type statusREST struct{ store *genericregistry.Store }

func (r *statusREST) New() runtime.Object { return &searchv1alpha1.ResourceRegistry{} }

// Destroy does nothing: the main store owns the storage.
func (r *statusREST) Destroy() {}

func (r *statusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *statusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// A status update never creates the object.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *statusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *statusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// registryStrategy validates ResourceRegistries by their CRD's schema. As with a CRD whose
// status is a subresource, writes to the object keep its status and writes to the status
// keep the rest.
type registryStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	schema *registrySchema
}

func (registryStrategy) NamespaceScoped() bool { return false }

func (registryStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*searchv1alpha1.ResourceRegistry).Status = searchv1alpha1.ResourceRegistryStatus{}
}

func (registryStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*searchv1alpha1.ResourceRegistry).Status = old.(*searchv1alpha1.ResourceRegistry).Status
}

func (s registryStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.validate(obj)
}

func (s registryStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.validate(obj)
}

// validate checks obj against the CRD's schema, as the CRD would. A decoded object has every
// field its Go type always writes, so the schema cannot tell a missing selector kind from an
// empty one: those are checked here.
func (s registryStrategy) validate(obj runtime.Object) field.ErrorList {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := validation.ValidateCustomResource(nil, content, s.schema.validator)
	selectors := field.NewPath("spec", "resourceSelectors")
	for i, selector := range obj.(*searchv1alpha1.ResourceRegistry).Spec.ResourceSelectors {
		if selector.APIVersion == "" {
			errs = append(errs, field.Required(selectors.Index(i).Child("apiVersion"), ""))
		}
		if selector.Kind == "" {
			errs = append(errs, field.Required(selectors.Index(i).Child("kind"), ""))
		}
	}
	return errs
}

func (registryStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (registryStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (registryStrategy) Canonicalize(runtime.Object) {}

func (registryStrategy) AllowCreateOnUpdate() bool { return false }

func (registryStrategy) AllowUnconditionalUpdate() bool { return true }

func (registryStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(searchv1alpha1.GroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// statusStrategy is the strategy of the status subresource: only the status changes.
type statusStrategy struct{ registryStrategy }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	updated, current := obj.(*searchv1alpha1.ResourceRegistry), old.(*searchv1alpha1.ResourceRegistry)
	updated.Spec = current.Spec
	updated.Labels, updated.Annotations = current.Labels, current.Annotations
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(searchv1alpha1.GroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "labels"), fieldpath.MakePathOrDie("metadata", "annotations")),
	}
}
