package workcache

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Works as the control plane's API server serves them, managedFields included.

// uid is a stable UID for fixture i, part p.
func uid(i, p int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, p, i%4096, p%4096, i*7+p)
}

// deploymentWorkJSON is a Work of Karmada's binding controller (a Deployment for member1) as
// Work execution left it standalone: its finalizer added, Applied and manifest identifiers
// written.
func deploymentWorkJSON(i int) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {
    "name": "web-%[1]d-7c9f6d5b8", "namespace": "karmada-es-member1", "uid": %[2]q,
    "resourceVersion": "%[3]d", "generation": 3, "creationTimestamp": "2026-03-01T10:00:00Z",
    "finalizers": ["karmada.io/execution-controller"],
    "labels": {"resourcebinding.karmada.io/permanent-id": %[4]q, "work.karmada.io/permanent-id": %[5]q},
    "annotations": {"resourcebinding.karmada.io/name": "web-%[1]d-deployment", "resourcebinding.karmada.io/namespace": "default",
      "work.karmada.io/conflict-resolution": "abort"},
    "managedFields": [
      {"manager": "karmada-controller-manager", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
       "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:resourcebinding.karmada.io/name": {}, "f:resourcebinding.karmada.io/namespace": {}, "f:work.karmada.io/conflict-resolution": {}},
         "f:labels": {".": {}, "f:resourcebinding.karmada.io/permanent-id": {}, "f:work.karmada.io/permanent-id": {}}},
         "f:spec": {".": {}, "f:workload": {".": {}, "f:manifests": {}}}}},
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
       "time": "2026-03-01T10:00:01Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"karmada.io/execution-controller\"": {}}}}},
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
       "time": "2026-03-01T10:00:02Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Applied\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
         "f:manifestStatuses": {}}}}
    ]
  },
  "spec": {"workload": {"manifests": [{
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {
      "name": "web-%[1]d", "namespace": "default",
      "labels": {"app": "web-%[1]d", "team": "storefront", "propagationpolicy.karmada.io/permanent-id": %[4]q,
        "resourcebinding.karmada.io/permanent-id": %[4]q, "work.karmada.io/permanent-id": %[5]q},
      "annotations": {"propagationpolicy.karmada.io/name": "web", "propagationpolicy.karmada.io/namespace": "default",
        "resourcebinding.karmada.io/name": "web-%[1]d-deployment", "resourcebinding.karmada.io/namespace": "default",
        "resourcetemplate.karmada.io/uid": %[2]q,
        "resourcetemplate.karmada.io/managed-labels": "propagationpolicy.karmada.io/permanent-id,resourcebinding.karmada.io/permanent-id,work.karmada.io/permanent-id",
        "work.karmada.io/conflict-resolution": "abort", "work.karmada.io/name": "web-%[1]d-7c9f6d5b8", "work.karmada.io/namespace": "karmada-es-member1"}
    },
    "spec": {
      "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
      "selector": {"matchLabels": {"app": "web-%[1]d"}},
      "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%%", "maxUnavailable": "25%%"}},
      "template": {
        "metadata": {"labels": {"app": "web-%[1]d", "team": "storefront"}},
        "spec": {
          "containers": [{
            "name": "web", "image": "registry.example.com/storefront/web:1.42.%[1]d", "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "DB_HOST", "value": "db.default.svc"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
          }],
          "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst"
        }
      }
    }
  }]}},
  "status": {
    "conditions": [
      {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "Manifest has been successfully applied", "observedGeneration": 3, "lastTransitionTime": "2026-03-01T10:00:02Z"}
    ],
    "manifestStatuses": [
      {"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "resource": "deployments", "namespace": "default", "name": "web-%[1]d"}}
    ]
  }
}`, i, uid(i, 1), 100000+i, uid(i, 2), uid(i, 3))
}

// dispatchedWorkJSON is a MultiClusterService's Work of a provider's slice (two endpoints)
// for the consumer member2, applied.
func dispatchedWorkJSON(i int) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {
    "name": "mcs-svc-%[1]d-member1-svc-%[1]d-x7k2p", "namespace": "karmada-es-member2", "uid": %[2]q,
    "resourceVersion": "%[3]d", "generation": 4, "creationTimestamp": "2026-03-01T10:00:00Z",
    "finalizers": ["karmada.io/execution-controller"],
    "labels": {"multiclusterservice.karmada.io/name": "svc-%[1]d", "multiclusterservice.karmada.io/namespace": "demo",
      "karmadaflow.io/work-role": "dispatched", "karmadaflow.io/provider": "member1"},
    "annotations": {"karmadaflow.io/manifest-hash": "9f2c4e8a1b7d3f60", "karmadaflow.io/detected-at": "2026-03-01T10:00:00.123456789Z",
      "work.karmada.io/conflict-resolution": "overwrite"},
    "managedFields": [
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:karmadaflow.io/detected-at": {}, "f:karmadaflow.io/manifest-hash": {}, "f:work.karmada.io/conflict-resolution": {}},
         "f:finalizers": {".": {}, "v:\"karmada.io/execution-controller\"": {}},
         "f:labels": {".": {}, "f:karmadaflow.io/provider": {}, "f:karmadaflow.io/work-role": {}, "f:multiclusterservice.karmada.io/name": {}, "f:multiclusterservice.karmada.io/namespace": {}}},
         "f:spec": {".": {}, "f:workload": {".": {}, "f:manifests": {}}}}},
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Applied\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
         "f:manifestStatuses": {}}}}
    ]
  },
  "spec": {"workload": {"manifests": [{
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": "member1-svc-%[1]d-x7k2p", "namespace": "demo",
      "labels": {"kubernetes.io/service-name": "svc-%[1]d", "endpointslice.kubernetes.io/managed-by": "endpointslice-dispatch-controller.karmada.io",
        "karmada.io/managed": "true"},
      "annotations": {"endpointslice.karmada.io/provision-cluster": "member1", "endpointslice.karmada.io/endpointslice-generation": "7",
        "work.karmada.io/name": "mcs-svc-%[1]d-member1-svc-%[1]d-x7k2p", "work.karmada.io/namespace": "karmada-es-member2"}},
    "addressType": "IPv4",
    "endpoints": [
      {"addresses": ["10.1.0.%[4]d"], "conditions": {"ready": true, "serving": true, "terminating": false}},
      {"addresses": ["10.1.1.%[4]d"], "conditions": {"ready": true, "serving": true, "terminating": false}}
    ],
    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
  }]}},
  "status": {
    "conditions": [
      {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "Manifest has been successfully applied", "observedGeneration": 4, "lastTransitionTime": "2026-03-01T10:00:00Z"}
    ],
    "manifestStatuses": [
      {"identifier": {"ordinal": 0, "group": "discovery.k8s.io", "version": "v1", "kind": "EndpointSlice", "resource": "endpointslices", "namespace": "demo", "name": "member1-svc-%[1]d-x7k2p"}}
    ]
  }
}`, i, uid(i, 4), 200000+i, i%250+1)
}

// collectedWorkJSON is a provider's EndpointSlice of endpoints endpoints, collected into a
// suspended Work of its execution namespace: every endpoint with its node, zone and Pod.
func collectedWorkJSON(i, endpoints int) []byte {
	var eps strings.Builder
	for e := range endpoints {
		if e > 0 {
			eps.WriteString(",\n")
		}
		fmt.Fprintf(&eps, `{"addresses": ["10.%d.%d.%d"], "conditions": {"ready": true, "serving": true, "terminating": false},
      "nodeName": "node-%d", "zone": "zone-%c", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%d-5d7b9c8f4-%05d", "uid": %q}}`,
			i%250, e/250, e%250+1, e%40, 'a'+e%3, i, e, uid(i, e+10))
	}
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {
    "name": "endpointslice-svc-%[1]d-x7k2p-demo", "namespace": "karmada-es-member1", "uid": %[2]q,
    "resourceVersion": "%[3]d", "generation": 9, "creationTimestamp": "2026-03-01T10:00:00Z",
    "labels": {"multiclusterservice.karmada.io/name": "svc-%[1]d", "multiclusterservice.karmada.io/namespace": "demo",
      "karmadaflow.io/work-role": "collected"},
    "annotations": {"karmadaflow.io/manifest-hash": "1b7d3f609f2c4e8a"},
    "managedFields": [
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:karmadaflow.io/manifest-hash": {}},
         "f:labels": {".": {}, "f:karmadaflow.io/work-role": {}, "f:multiclusterservice.karmada.io/name": {}, "f:multiclusterservice.karmada.io/namespace": {}}},
         "f:spec": {".": {}, "f:suspendDispatching": {}, "f:workload": {".": {}, "f:manifests": {}}}}}
    ]
  },
  "spec": {"suspendDispatching": true, "workload": {"manifests": [{
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": "svc-%[1]d-x7k2p", "namespace": "demo",
      "labels": {"kubernetes.io/service-name": "svc-%[1]d", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
      "annotations": {"endpointslice.karmada.io/endpointslice-generation": "7"}},
    "addressType": "IPv4",
    "endpoints": [%[4]s],
    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
  }]}}
}`, i, uid(i, 5), 300000+i, eps.String())
}

// paddedWorkJSON is a Work an agent may write into its execution namespace, with a ConfigMap
// whose data has keys entries: a small map entry each, as many as the API server takes.
func paddedWorkJSON(i, keys int) []byte {
	var data strings.Builder
	for k := range keys {
		if k > 0 {
			data.WriteByte(',')
		}
		fmt.Fprintf(&data, `"%x":""`, k)
	}
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {"name": "padded-%[1]d", "namespace": "karmada-es-member1", "uid": %[2]q, "resourceVersion": "%[3]d", "generation": 1,
    "labels": {"multiclusterservice.karmada.io/name": "svc-%[1]d", "multiclusterservice.karmada.io/namespace": "demo",
      "karmadaflow.io/work-role": "collected", "team": "storefront"},
    "annotations": {"note": "padded"}},
  "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "padded-%[1]d", "namespace": "demo"},
    "data": {%[4]s}}]}}
}`, i, uid(i, 6), 400000+i, data.String())
}

// decoded is the Work of data as client-go decodes it for an informer.
func decoded(t testing.TB, data []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}
