package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/starter/certexpiry"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// The transforms keep what the starter reads: every key function, predicate, indexer and
// handler of the starter gives the same answer on a transformed object as on the full one,
// for objects as the API servers serve them and for the updates the triggers compare.

// transformCase is one kind of object an informer of the starter holds.
type transformCase struct {
	name      string
	transform cache.TransformFunc
	objects   []runtime.Object
	// view is everything the starter's readers make of one object.
	view func(t *testing.T, obj runtime.Object) map[string]any
	// predicates compare an old and a new object on update.
	predicates map[string]trigger.RelevantFunc
	// updates change an object as the API server would (resourceVersion aside).
	updates map[string]func(obj runtime.Object)
}

func TestTransformsKeepWhatTheStarterReads(t *testing.T) {
	for _, tc := range transformCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, obj := range tc.objects {
				name := objectName(t, obj)
				full := obj.DeepCopyObject()
				trimmed := transformed(t, tc.transform, obj)
				assert.Equal(t, full, obj, "%s: the transform writes nothing to the object it is given", name)
				assert.Equal(t, trimmed, transformed(t, tc.transform, trimmed.DeepCopyObject()), "%s: the transform is idempotent", name)
				assert.Equal(t, tc.view(t, full), tc.view(t, trimmed), "%s: the starter reads the same of it", name)

				for _, update := range slices.Sorted(maps.Keys(tc.updates)) {
					updated := full.DeepCopyObject()
					tc.updates[update](updated)
					bumpResourceVersion(t, updated)
					trimmedUpdated := transformed(t, tc.transform, updated.DeepCopyObject())
					assert.Equal(t, tc.view(t, updated), tc.view(t, trimmedUpdated), "%s after %s", name, update)
					for _, p := range slices.Sorted(maps.Keys(tc.predicates)) {
						relevant := tc.predicates[p]
						assert.Equal(t, relevant(accessor(t, full), accessor(t, updated)), relevant(accessor(t, trimmed), accessor(t, trimmedUpdated)),
							"%s: %s of update %q", name, p, update)
					}
				}
			}
		})
	}
}

func TestTransformsDropWhatNobodyReads(t *testing.T) {
	work := trimmedUnstructured(t, transformWork, karmadaWorkJSON(1, "member1"))
	assert.Empty(t, work.GetManagedFields())
	assert.Empty(t, work.GetAnnotations())
	assert.Empty(t, work.GetLabels(), "Karmada's own labels are nobody's here")
	assert.Equal(t, []string{"karmada.io/execution-controller"}, work.GetFinalizers())
	assert.NotContains(t, work.Object, "spec", "no manifests")
	status, _, _ := unstructured.NestedMap(work.Object, "status")
	assert.Equal(t, []string{"conditions"}, slices.Collect(maps.Keys(status)), "no manifest statuses")
	assert.Equal(t, []string{workv1alpha1.WorkApplied}, conditionTypes(work), "nor the Available condition")
	assert.Empty(t, work.GetCreationTimestamp())

	dispatched := trimmedUnstructured(t, transformWork, dispatchedWorkJSON(1))
	assert.Equal(t, map[string]string{networkingv1alpha1.LabelMCSName: "svc-1", networkingv1alpha1.LabelMCSNamespace: "demo",
		naming.LabelWorkRole: naming.RoleDispatched}, dispatched.GetLabels())

	for _, tc := range []struct {
		transform cache.TransformFunc
		data      []byte
		want      []string // the fields kept besides apiVersion, kind and metadata
		condition string   // the only condition kept
	}{
		{transformMCS, mcsJSON(1, "[]", "[]", "x"), []string{"spec", "status"}, networkingv1alpha1.ConditionEndpointSliceApplied},
		{transformCluster, clusterJSON("member1", "True"), []string{"spec", "status"}, "Ready"},
		{transformKarmada, karmadaJSON("demo", `{"a": "b"}`), nil, ""},
	} {
		u := trimmedUnstructured(t, tc.transform, tc.data)
		assert.Empty(t, u.GetManagedFields(), u.GetKind())
		assert.Empty(t, u.GetLabels(), u.GetKind())
		assert.Empty(t, u.GetAnnotations(), u.GetKind())
		assert.Empty(t, u.GetFinalizers(), u.GetKind())
		assert.ElementsMatch(t, append([]string{"apiVersion", "kind", "metadata"}, tc.want...), slices.Collect(maps.Keys(u.Object)), u.GetKind())
		if status, ok := u.Object["status"].(map[string]any); ok {
			assert.Equal(t, []string{"conditions"}, slices.Collect(maps.Keys(status)), u.GetKind())
			assert.Equal(t, []string{tc.condition}, conditionTypes(u), u.GetKind())
		}
	}

	// Of a Karmada's status, only the names and expiries of its certificates.
	karmada := trimmedUnstructured(t, transformKarmada, provisionedKarmadaJSON("demo"))
	assert.ElementsMatch(t, []string{"apiVersion", "kind", "metadata", "status"}, slices.Collect(maps.Keys(karmada.Object)))
	status, _, _ = unstructured.NestedMap(karmada.Object, "status")
	assert.Equal(t, []string{"certificates"}, slices.Collect(maps.Keys(status)))
	certificates, _, _ := unstructured.NestedMap(karmada.Object, "status", "certificates")
	assert.Equal(t, []string{"items"}, slices.Collect(maps.Keys(certificates)), "not the earliest expiry nor the renewal time")
	assert.Equal(t, 11, strings.Count(certificateExpiry(t, karmada), certexpiry.MetricName+"{"), "one series per certificate")

	svc, _ := transformService(decodeService(serviceJSON(1)))
	assert.Equal(t, &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "svc-1", Namespace: "demo", UID: types.UID(uid(1, 7)), ResourceVersion: "300001",
			Labels: map[string]string{"app": "svc-1", "team": "storefront"}},
		Spec: decodeService(serviceJSON(1)).Spec,
	}, svc)

	slice, _ := transformEndpointSlice(decodeEndpointSlice(memberSliceJSON(1)))
	assert.Equal(t, &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "svc-1-x7k2p", Namespace: "demo", UID: types.UID(uid(1, 8)), ResourceVersion: "400001",
			Generation: 7, Labels: map[string]string{networkingv1alpha1.LabelServiceName: "svc-1"}},
	}, slice)
}

// A change of kubectl's last-applied-configuration alone changes nothing of the Service the
// members get, so it signals nothing any more.
func TestServiceLastAppliedAloneIsNotAChange(t *testing.T) {
	old := decodeService(serviceJSON(1))
	updated := old.DeepCopy()
	updated.Annotations[corev1.LastAppliedConfigAnnotation] = "{}"
	updated.ResourceVersion = "300002"
	assert.True(t, serviceChanged(old, updated), "the full objects differ")
	o, _ := transformService(old)
	n, _ := transformService(updated)
	assert.False(t, serviceChanged(o.(*corev1.Service), n.(*corev1.Service)))
	updated.Annotations["team"] = "checkout"
	n, _ = transformService(updated)
	assert.True(t, serviceChanged(o.(*corev1.Service), n.(*corev1.Service)), "other annotations count")
}

func TestTransformsPassTombstonesAndOtherTypes(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "a/b", Obj: decodeUnstructured(dispatchedWorkJSON(1))}
	for _, transform := range []cache.TransformFunc{transformWork, transformMCS, transformCluster, transformKarmada, transformService, transformEndpointSlice} {
		out, err := transform(tomb)
		require.NoError(t, err)
		assert.Equal(t, tomb, out)
	}
}

func TestWorksListOptions(t *testing.T) {
	assert.Nil(t, worksListOptions(true), "Work execution executes Karmada's own Works too")
	var opts metav1.ListOptions
	worksListOptions(false)(&opts)
	selector, err := labels.Parse(opts.LabelSelector)
	require.NoError(t, err)
	// Without execution, a Work matters when, indexed under its MultiClusterService, it
	// counts for the EndpointSliceApplied reason.
	for _, data := range [][]byte{karmadaWorkJSON(1, "member1"), dispatchedWorkJSON(1)} {
		for _, role := range []string{"", naming.RoleService, naming.RoleCollected, naming.RoleDispatched} {
			for _, mcsName := range []string{"", "svc-1"} {
				u := decodeUnstructured(data)
				l := u.GetLabels()
				for key, value := range map[string]string{naming.LabelWorkRole: role, networkingv1alpha1.LabelMCSName: mcsName} {
					if value == "" {
						delete(l, key)
					} else {
						l[key] = value
					}
				}
				u.SetLabels(l)
				u = withAppliedCondition(u) // failed
				index, _ := indexWorksByMCS(u)
				matters := len(index) > 0 && appliedReason([]any{u}, nil) == networkingv1alpha1.ReasonEndpointSliceAppliedFailed
				assert.Equal(t, matters, selector.Matches(labels.Set(u.GetLabels())), "%s with role %q, MultiClusterService %q", u.GetName(), role, mcsName)
				if key, _ := dispatchedWorkKey(u); matters {
					assert.Equal(t, index[0], key, "the works-applied trigger sees it")
				}
			}
		}
	}
}

func withAppliedCondition(u *unstructured.Unstructured) *unstructured.Unstructured {
	u = u.DeepCopy()
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Applied", "status": "False", "message": "refused", "observedGeneration": u.GetGeneration()}},
		"status", "conditions")
	return u
}

func transformCases() []transformCase {
	unstructuredUpdates := func(extra map[string]func(u *unstructured.Unstructured)) map[string]func(runtime.Object) {
		updates := map[string]func(u *unstructured.Unstructured){
			"spec change": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "changed", "spec", "changed")
				u.SetGeneration(u.GetGeneration() + 1)
			},
			"deletion": func(u *unstructured.Unstructured) {
				u.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1770000000, 0)})
			},
			"managedFields": func(u *unstructured.Unstructured) {
				u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "someone"}))
			},
			"annotation": func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"someone": "else"})
			},
			"finalizer removed": func(u *unstructured.Unstructured) { u.SetFinalizers(nil) },
			"conditions gone":   func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "status", "conditions") },
			"condition flips": func(u *unstructured.Unstructured) {
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, c := range conds {
					cond := c.(map[string]any)
					cond["status"] = map[string]string{"True": "False", "False": "True"}[cond["status"].(string)]
					cond["reason"] = "Flipped"
					cond["message"] = "flipped"
				}
				_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
			},
			"another condition first": func(u *unstructured.Unstructured) {
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				conds = append([]any{map[string]any{"type": "Other", "status": "False", "reason": "Other", "message": "other"}}, conds...)
				_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
			},
			"condition observed behind": func(u *unstructured.Unstructured) {
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, c := range conds {
					c.(map[string]any)["observedGeneration"] = u.GetGeneration() - 1
				}
				_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
			},
		}
		maps.Copy(updates, extra)
		out := map[string]func(runtime.Object){}
		for name, f := range updates {
			out[name] = func(obj runtime.Object) { f(obj.(*unstructured.Unstructured)) }
		}
		return out
	}
	setLabel := func(key, value string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			if value == "" {
				delete(l, key)
			} else {
				l[key] = value
			}
			u.SetLabels(l)
		}
	}
	decode := func(data ...[]byte) []runtime.Object {
		var objs []runtime.Object
		for _, d := range data {
			objs = append(objs, decodeUnstructured(d))
		}
		return objs
	}

	// Works of every kind the starter tells apart.
	var works []runtime.Object
	for _, data := range [][]byte{karmadaWorkJSON(1, "member1"), dispatchedWorkJSON(2)} {
		base := decodeUnstructured(data)
		works = append(works, base)
		for _, role := range []string{naming.RoleService, naming.RoleCollected} {
			w := base.DeepCopy()
			setLabel(naming.LabelWorkRole, role)(w)
			setLabel(networkingv1alpha1.LabelMCSName, "svc-3")(w)
			setLabel(networkingv1alpha1.LabelMCSNamespace, "demo")(w)
			works = append(works, w)
		}
		suspended := base.DeepCopy()
		_ = unstructured.SetNestedField(suspended.Object, true, "spec", "suspendDispatching")
		works = append(works, suspended)
		unsuspended := suspended.DeepCopy()
		unsuspended.SetFinalizers(nil)
		works = append(works, unsuspended)
		outside := base.DeepCopy()
		outside.SetNamespace("default")
		works = append(works, outside)
		deleting := base.DeepCopy()
		deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1770000000, 0)})
		works = append(works, deleting, withAppliedCondition(base))
		noStatus := base.DeepCopy()
		delete(noStatus.Object, "status")
		works = append(works, noStatus)
	}

	return []transformCase{{
		name: "Work", transform: transformWork, objects: works,
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			u := obj.(*unstructured.Unstructured)
			batches := newWorkBatches()
			executionKey, err := batches.key(u)
			require.NoError(t, err)
			names, versions := batches.take(executionKey)
			dispatchedKey, err := dispatchedWorkKey(u)
			require.NoError(t, err)
			writtenKey, err := writtenWorkKey(u)
			require.NoError(t, err)
			index, err := indexWorksByMCS(u)
			require.NoError(t, err)
			applied, failure := mcsactivities.WorkApplied(u)
			conds, err := kube.Conditions(u)
			require.NoError(t, err)
			return map[string]any{
				"key": objectKey(t, u), "works-execution key": executionKey, "batched names": names, "batched versions": versions,
				"works-applied key": dispatchedKey, "works-written key": writtenKey, "worksByMCS": index,
				"appliedStatus": appliedStatus(u), "WorkApplied": applied, "WorkApplied failure": failure,
				"appliedReason": appliedReason([]any{u}, nil), "appliedReason unready": appliedReason([]any{u}, []string{"member2"}),
				"recordOnly": recordOnly(u), "appliedByWriter": appliedByWriter(u),
				"Applied condition": meta.FindStatusCondition(conds, workv1alpha1.WorkApplied),
				"generation":        u.GetGeneration(), "deletionTimestamp": u.GetDeletionTimestamp(),
			}
		},
		predicates: map[string]trigger.RelevantFunc{"appliedChanged": appliedChanged, "GenerationOrMetadata": trigger.GenerationOrMetadata(nil, nil)},
		updates: unstructuredUpdates(map[string]func(u *unstructured.Unstructured){
			"manifests change": func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "workload")
				u.SetGeneration(u.GetGeneration() + 1)
			},
			"manifest statuses change": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"health": "Unhealthy"}}, "status", "manifestStatuses")
			},
			"role dispatched": setLabel(naming.LabelWorkRole, naming.RoleDispatched),
			"role gone":       setLabel(naming.LabelWorkRole, ""),
			"mcs renamed":     setLabel(networkingv1alpha1.LabelMCSName, "other"),
			"mcs moved":       setLabel(networkingv1alpha1.LabelMCSNamespace, "elsewhere"),
			"other label":     setLabel("karmada.io/managed", "false"),
			"suspended": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, true, "spec", "suspendDispatching")
			},
		}),
	}, {
		name: "MultiClusterService", transform: transformMCS,
		objects: decode(mcsJSON(1, "[]", "[]", networkingv1alpha1.ReasonEndpointSliceAppliedSuccess),
			mcsJSON(2, `[{"name": "member1"}]`, `[{"name": "member2"}]`, networkingv1alpha1.ReasonEndpointSliceAppliedFailed)),
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			u := obj.(*unstructured.Unstructured)
			var typed networkingv1alpha1.MultiClusterService
			decodeErr := kube.FromUnstructured(u, &typed)
			providers, consumers := typed.Spec.ClusterLists()
			return map[string]any{
				"key": objectKey(t, u), "decodes": decodeErr == nil, "spec": typed.Spec, "providers": providers, "consumers": consumers,
				"involves member1": involves(u, "member1"), "involves member3": involves(u, "member3"),
				"EndpointSliceApplied reason": conditionValue(u, networkingv1alpha1.ConditionEndpointSliceApplied, "reason"),
				"generation":                  u.GetGeneration(), "deletionTimestamp": u.GetDeletionTimestamp(),
			}
		},
		predicates: map[string]trigger.RelevantFunc{"appliedReasonChanged": appliedReasonChanged, "GenerationOrMetadata": trigger.GenerationOrMetadata(nil, nil)},
		updates: unstructuredUpdates(map[string]func(u *unstructured.Unstructured){
			"consumers change": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "member3"}}, "spec", "consumerClusters")
				u.SetGeneration(u.GetGeneration() + 1)
			},
			"label": setLabel("team", "checkout"),
		}),
	}, {
		name: "Cluster", transform: transformCluster,
		objects: decode(clusterJSON("member1", "True"), clusterJSON("member2", "False"), clusterJSON("member3", "Unknown")),
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			u := obj.(*unstructured.Unstructured)
			return map[string]any{
				"key": objectKey(t, u), "ready": readyStatus(u), "name": u.GetName(),
				// memberSlices.ensure restarts a member's watch when this changes.
				"watch version": fmt.Sprintf("%d/%s", u.GetGeneration(), readyStatus(u)),
				"generation":    u.GetGeneration(), "deletionTimestamp": u.GetDeletionTimestamp(),
				// onCluster sends it with each change.
				"state": clusterState(u),
			}
		},
		predicates: map[string]trigger.RelevantFunc{"clusterChanged": clusterChanged},
		updates: unstructuredUpdates(map[string]func(u *unstructured.Unstructured){
			"summary": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(2), "status", "nodeSummary", "readyNum")
			},
			"switched to Pull": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "Pull", "spec", "syncMode")
			},
			"Ready flipped": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
					"lastTransitionTime": "2026-03-02T10:00:00Z"}}, "status", "conditions")
			},
		}),
	}, {
		name: "Karmada", transform: transformKarmada,
		objects: decode(karmadaJSON("demo", `{}`), karmadaJSON("kept", `{"`+operatorv1alpha1.LabelDisableCascadingDeletion+`": "true", "team": "a"}`),
			provisionedKarmadaJSON("provisioned")),
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			u := obj.(*unstructured.Unstructured)
			return map[string]any{"key": objectKey(t, u), "generation": generation(u), "deletionTimestamp": u.GetDeletionTimestamp(),
				"certificate expiry": certificateExpiry(t, u)}
		},
		predicates: map[string]trigger.RelevantFunc{"GenerationOrMetadata": trigger.GenerationOrMetadata([]string{operatorv1alpha1.LabelDisableCascadingDeletion}, nil)},
		updates: unstructuredUpdates(map[string]func(u *unstructured.Unstructured){
			"cascading deletion disabled": setLabel(operatorv1alpha1.LabelDisableCascadingDeletion, "true"),
			"cascading deletion enabled":  setLabel(operatorv1alpha1.LabelDisableCascadingDeletion, ""),
			"other label":                 setLabel("team", "b"),
			"certificates renewed": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "karmada-cert/apiserver.crt", "notAfter": "2028-03-01T09:00:00Z"}},
					"status", "certificates", "items")
			},
			"status condition": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False"}}, "status", "conditions")
			},
		}),
	}, {
		name: "Service", transform: transformService,
		objects: []runtime.Object{decodeService(serviceJSON(1)), func() runtime.Object {
			svc := decodeService(serviceJSON(2))
			svc.Annotations = nil
			return svc
		}()},
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			return map[string]any{"key": objectKey(t, obj)}
		},
		predicates: map[string]trigger.RelevantFunc{"serviceChanged": serviceChanged},
		updates: map[string]func(runtime.Object){
			"port":       func(obj runtime.Object) { obj.(*corev1.Service).Spec.Ports[0].Port = 81 },
			"selector":   func(obj runtime.Object) { obj.(*corev1.Service).Spec.Selector = map[string]string{"app": "other"} },
			"label":      func(obj runtime.Object) { obj.(*corev1.Service).Labels["team"] = "checkout" },
			"annotation": func(obj runtime.Object) { metav1.SetMetaDataAnnotation(&obj.(*corev1.Service).ObjectMeta, "a", "b") },
			"load balancer": func(obj runtime.Object) {
				obj.(*corev1.Service).Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
			},
			"managedFields": func(obj runtime.Object) { obj.(*corev1.Service).ManagedFields = nil },
			"deletion": func(obj runtime.Object) {
				obj.(*corev1.Service).DeletionTimestamp = &metav1.Time{Time: time.Unix(1770000000, 0)}
			},
			"finalizer added": func(obj runtime.Object) { obj.(*corev1.Service).Finalizers = []string{"x"} },
		},
	}, {
		name: "member EndpointSlice", transform: transformEndpointSlice,
		objects: []runtime.Object{decodeEndpointSlice(memberSliceJSON(1))},
		view: func(t *testing.T, obj runtime.Object) map[string]any {
			key, err := trigger.EndpointSliceServiceKey(obj)
			require.NoError(t, err)
			tombKey, err := trigger.EndpointSliceServiceKey(cache.DeletedFinalStateUnknown{Key: objectKey(t, obj), Obj: obj})
			require.NoError(t, err)
			return map[string]any{"key": objectKey(t, obj), "serviceKey": key, "tombstone serviceKey": tombKey}
		},
		predicates: map[string]trigger.RelevantFunc{"GenerationOrMetadata": trigger.GenerationOrMetadata(nil, nil)},
		updates: map[string]func(runtime.Object){
			"endpoint": func(obj runtime.Object) {
				s := obj.(*discoveryv1.EndpointSlice)
				s.Endpoints = s.Endpoints[1:]
				s.Generation++
			},
			"service": func(obj runtime.Object) {
				obj.(*discoveryv1.EndpointSlice).Labels[networkingv1alpha1.LabelServiceName] = "other"
			},
			"trigger time": func(obj runtime.Object) {
				obj.(*discoveryv1.EndpointSlice).Annotations["endpoints.kubernetes.io/last-change-trigger-time"] = "later"
			},
			"deletion": func(obj runtime.Object) {
				obj.(*discoveryv1.EndpointSlice).DeletionTimestamp = &metav1.Time{Time: time.Unix(1770000000, 0)}
			},
		},
	}}
}

func conditionTypes(u *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var types []string
	for _, c := range conds {
		types = append(types, c.(map[string]any)["type"].(string))
	}
	return types
}

func transformed(t *testing.T, transform cache.TransformFunc, obj runtime.Object) runtime.Object {
	t.Helper()
	out, err := transform(obj)
	require.NoError(t, err)
	return out.(runtime.Object)
}

// certificateExpiry is the certificate expiry metric's series of u alone.
func certificateExpiry(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	require.NoError(t, store.Add(u))
	registry := prometheus.NewRegistry()
	require.NoError(t, certexpiry.Register(registry, store))
	text, err := testutil.GatherAndFormat(registry, expfmt.TypeTextPlain, certexpiry.MetricName)
	require.NoError(t, err)
	return string(text)
}

func trimmedUnstructured(t *testing.T, transform cache.TransformFunc, data []byte) *unstructured.Unstructured {
	t.Helper()
	return transformed(t, transform, decodeUnstructured(data)).(*unstructured.Unstructured)
}

func accessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	require.NoError(t, err)
	return m
}

func objectKey(t *testing.T, obj any) string {
	t.Helper()
	key, err := trigger.ObjectKey(obj)
	require.NoError(t, err)
	return key
}

func objectName(t *testing.T, obj runtime.Object) string {
	return fmt.Sprintf("%s %s", obj.GetObjectKind().GroupVersionKind().Kind, objectKey(t, obj))
}

func bumpResourceVersion(t *testing.T, obj runtime.Object) {
	m := accessor(t, obj)
	rv, _ := strconv.Atoi(m.GetResourceVersion())
	m.SetResourceVersion(strconv.Itoa(rv + 1))
}

// clusterState is what onCluster sends of a Cluster with its changes.
func clusterState(u *unstructured.Unstructured) any {
	state, ok := mcsactivities.ClusterStateOf(u)
	if !ok {
		return "ignored"
	}
	return state
}
