package main

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Objects as the API servers serve them to the starter's informers, managedFields and all:
// what the transforms trim and the footprint benchmark stores.

func decodeUnstructured(data []byte) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(fmt.Sprintf("%v\n%s", err, data))
	}
	return u
}

func decodeService(data []byte) *corev1.Service {
	svc := &corev1.Service{}
	if err := json.Unmarshal(data, svc); err != nil {
		panic(fmt.Sprintf("%v\n%s", err, data))
	}
	return svc
}

func decodeEndpointSlice(data []byte) *discoveryv1.EndpointSlice {
	slice := &discoveryv1.EndpointSlice{}
	if err := json.Unmarshal(data, slice); err != nil {
		panic(fmt.Sprintf("%v\n%s", err, data))
	}
	return slice
}

func uid(i int, salt byte) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, salt, i%4096, int(salt)*7%4096, i*7919+int(salt))
}

// karmadaWorkJSON is a Work as Karmada's binding controller writes it for Deployment
// default/web-i in member's execution namespace, applied and reported by its execution and
// work-status controllers.
func karmadaWorkJSON(i int, member string) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {
    "name": "web-%[1]d-7c9f6d5b8", "namespace": "karmada-es-%[2]s", "uid": %[3]q,
    "resourceVersion": "%[4]d", "generation": 3, "creationTimestamp": "2026-03-01T10:00:00Z",
    "finalizers": ["karmada.io/execution-controller"],
    "labels": {
      "resourcebinding.karmada.io/permanent-id": %[5]q,
      "work.karmada.io/permanent-id": %[6]q
    },
    "annotations": {
      "resourcebinding.karmada.io/name": "web-%[1]d-deployment",
      "resourcebinding.karmada.io/namespace": "default",
      "work.karmada.io/conflict-resolution": "abort"
    },
    "managedFields": [
      {"manager": "karmada-controller-manager", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
       "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:resourcebinding.karmada.io/name": {}, "f:resourcebinding.karmada.io/namespace": {}, "f:work.karmada.io/conflict-resolution": {}},
         "f:finalizers": {".": {}, "v:\"karmada.io/execution-controller\"": {}},
         "f:labels": {".": {}, "f:resourcebinding.karmada.io/permanent-id": {}, "f:work.karmada.io/permanent-id": {}}},
         "f:spec": {".": {}, "f:workload": {".": {}, "f:manifests": {}}}}},
      {"manager": "karmada-controller-manager", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
       "time": "2026-03-01T10:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Applied\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
         "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
         "f:manifestStatuses": {}}}}
    ]
  },
  "spec": {"workload": {"manifests": [{
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {
      "name": "web-%[1]d", "namespace": "default",
      "labels": {"app": "web-%[1]d", "team": "storefront", "propagationpolicy.karmada.io/permanent-id": %[5]q,
        "resourcebinding.karmada.io/permanent-id": %[5]q, "work.karmada.io/permanent-id": %[6]q},
      "annotations": {"propagationpolicy.karmada.io/name": "web", "propagationpolicy.karmada.io/namespace": "default",
        "resourcebinding.karmada.io/name": "web-%[1]d-deployment", "resourcebinding.karmada.io/namespace": "default",
        "resourcetemplate.karmada.io/uid": %[3]q, "resourcetemplate.karmada.io/managed-annotations": "propagationpolicy.karmada.io/name,propagationpolicy.karmada.io/namespace,resourcebinding.karmada.io/name,resourcebinding.karmada.io/namespace,resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,resourcetemplate.karmada.io/uid,work.karmada.io/conflict-resolution,work.karmada.io/name,work.karmada.io/namespace",
        "resourcetemplate.karmada.io/managed-labels": "propagationpolicy.karmada.io/permanent-id,resourcebinding.karmada.io/permanent-id,work.karmada.io/permanent-id",
        "work.karmada.io/conflict-resolution": "abort", "work.karmada.io/name": "web-%[1]d-7c9f6d5b8", "work.karmada.io/namespace": "karmada-es-%[2]s"}
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
            "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "DB_HOST", "value": "db.default.svc"},
              {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
          }],
          "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
          "securityContext": {}, "schedulerName": "default-scheduler"
        }
      }
    }
  }]}},
  "status": {
    "conditions": [
      {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "Manifest has been successfully applied", "observedGeneration": 3, "lastTransitionTime": "2026-03-01T10:00:05Z"},
      {"type": "Available", "status": "True", "reason": "WorkAvailable", "message": "All manifests are available", "lastTransitionTime": "2026-03-01T10:00:09Z"}
    ],
    "manifestStatuses": [{
      "identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "resource": "", "namespace": "default", "name": "web-%[1]d"},
      "status": {"availableReplicas": 3, "readyReplicas": 3, "replicas": 3, "updatedReplicas": 3, "observedGeneration": 2,
        "conditions": [
          {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": "2026-03-01T10:00:09Z", "lastTransitionTime": "2026-03-01T10:00:09Z"},
          {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"web-%[1]d-5d7b9c8f4\" has successfully progressed.", "lastUpdateTime": "2026-03-01T10:00:09Z", "lastTransitionTime": "2026-03-01T10:00:05Z"}
        ]},
      "health": "Healthy"
    }]
  }
}`, i, member, uid(i, 1), 100000+i, uid(i, 2), uid(i, 3))
}

// dispatchedWorkJSON is a Work a MultiClusterService demo/svc-i dispatched: the slice of its
// Service that provider member1 has, for consumer member2, applied there.
func dispatchedWorkJSON(i int) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
  "metadata": {
    "name": "mcs-svc-%[1]d-member1-svc-%[1]d-x7k2p", "namespace": "karmada-es-member2", "uid": %[2]q,
    "resourceVersion": "%[3]d", "generation": 4, "creationTimestamp": "2026-03-01T10:00:00Z",
    "finalizers": ["karmadaflow.io/execution"],
    "labels": {"multiclusterservice.karmada.io/name": "svc-%[1]d", "multiclusterservice.karmada.io/namespace": "demo",
      "karmadaflow.io/work-role": "dispatched", "karmadaflow.io/provider": "member1", "karmada.io/managed": "true"},
    "annotations": {"karmadaflow.io/manifest-hash": "9f2c4e8a1b7d3f60", "karmadaflow.io/detected-at": "2026-03-01T10:00:00.123456789Z",
      "work.karmada.io/conflict-resolution": "overwrite"},
    "managedFields": [
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:karmadaflow.io/detected-at": {}, "f:karmadaflow.io/manifest-hash": {}, "f:work.karmada.io/conflict-resolution": {}},
         "f:finalizers": {".": {}, "v:\"karmadaflow.io/execution\"": {}},
         "f:labels": {".": {}, "f:karmada.io/managed": {}, "f:karmadaflow.io/provider": {}, "f:karmadaflow.io/work-role": {}, "f:multiclusterservice.karmada.io/name": {}, "f:multiclusterservice.karmada.io/namespace": {}}},
         "f:spec": {".": {}, "f:workload": {".": {}, "f:manifests": {}}}}},
      {"manager": "karmadaflow", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Applied\"}": {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}}}
    ]
  },
  "spec": {"workload": {"manifests": [{
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": "member1-svc-%[1]d-x7k2p", "namespace": "demo",
      "labels": {"kubernetes.io/service-name": "svc-%[1]d", "endpointslice.kubernetes.io/managed-by": "endpointslice-dispatch-controller.karmada.io",
        "endpointslice.karmada.io/managed-by": "endpointslice-dispatch-controller.karmada.io", "karmada.io/managed": "true"},
      "annotations": {"endpointslice.karmada.io/provision-cluster": "member1", "endpointslice.karmada.io/work-provision-cluster": "member1",
        "endpointslice.karmada.io/endpointslice-generation": "7", "karmadaflow.io/work-uid": %[2]q, "karmadaflow.io/work-generation": "4"}},
    "addressType": "IPv4",
    "endpoints": [
      {"addresses": ["10.1.0.%[4]d"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "node-1", "zone": "zone-a", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%[1]d-5d7b9c8f4-abcde", "uid": %[5]q}},
      {"addresses": ["10.1.1.%[4]d"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "node-2", "zone": "zone-b", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%[1]d-5d7b9c8f4-fghij", "uid": %[6]q}}
    ],
    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
  }]}},
  "status": {"conditions": [
    {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "Manifest has been successfully applied", "observedGeneration": 4, "lastTransitionTime": "2026-03-01T10:00:00Z"}
  ]}
}`, i, uid(i, 4), 200000+i, i%250+1, uid(i, 5), uid(i, 6))
}

// serviceJSON is a Service of the control plane applied with kubectl.
func serviceJSON(i int) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "v1", "kind": "Service",
  "metadata": {
    "name": "svc-%[1]d", "namespace": "demo", "uid": %[2]q, "resourceVersion": "%[3]d", "creationTimestamp": "2026-03-01T10:00:00Z",
    "labels": {"app": "svc-%[1]d", "team": "storefront"},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"annotations\":{},\"labels\":{\"app\":\"svc-%[1]d\",\"team\":\"storefront\"},\"name\":\"svc-%[1]d\",\"namespace\":\"demo\"},\"spec\":{\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\",\"targetPort\":8080}],\"selector\":{\"app\":\"svc-%[1]d\"}}}\n"},
    "managedFields": [
      {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}, "f:labels": {".": {}, "f:app": {}, "f:team": {}}},
         "f:spec": {"f:internalTrafficPolicy": {}, "f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
           "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}}
    ]
  },
  "spec": {
    "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
    "selector": {"app": "svc-%[1]d"},
    "clusterIP": "10.96.%[4]d.%[5]d", "clusterIPs": ["10.96.%[4]d.%[5]d"], "type": "ClusterIP", "sessionAffinity": "None",
    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"
  },
  "status": {"loadBalancer": {}}
}`, i, uid(i, 7), 300000+i, i/250, i%250+1)
}

// memberSliceJSON is an EndpointSlice of a member's EndpointSlice controller, three endpoints.
func memberSliceJSON(i int) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {
    "name": "svc-%[1]d-x7k2p", "generateName": "svc-%[1]d-", "namespace": "demo", "uid": %[2]q, "resourceVersion": "%[3]d", "generation": 7,
    "creationTimestamp": "2026-03-01T10:00:00Z",
    "labels": {"app": "svc-%[1]d", "team": "storefront", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "kubernetes.io/service-name": "svc-%[1]d"},
    "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-03-01T10:00:09Z"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "svc-%[1]d", "uid": %[4]q, "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "discovery.k8s.io/v1", "time": "2026-03-01T10:00:09Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:addressType": {}, "f:endpoints": {}, "f:metadata": {"f:annotations": {".": {}, "f:endpoints.kubernetes.io/last-change-trigger-time": {}},
         "f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:endpointslice.kubernetes.io/managed-by": {}, "f:kubernetes.io/service-name": {}, "f:team": {}},
         "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}}, "f:ports": {}}}
    ]
  },
  "addressType": "IPv4",
  "endpoints": [
    {"addresses": ["10.1.0.%[5]d"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "node-1", "zone": "zone-a", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%[1]d-5d7b9c8f4-abcde", "uid": %[6]q}},
    {"addresses": ["10.1.1.%[5]d"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "node-2", "zone": "zone-b", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%[1]d-5d7b9c8f4-fghij", "uid": %[7]q}},
    {"addresses": ["10.1.2.%[5]d"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "node-3", "zone": "zone-c", "targetRef": {"kind": "Pod", "namespace": "demo", "name": "svc-%[1]d-5d7b9c8f4-klmno", "uid": %[8]q}}
  ],
  "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
}`, i, uid(i, 8), 400000+i, uid(i, 7), i%250+1, uid(i, 9), uid(i, 10), uid(i, 11))
}

// mcsJSON is MultiClusterService demo/svc-i with its conditions.
func mcsJSON(i int, providers, consumers string, appliedReason string) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
  "metadata": {"name": "svc-%[1]d", "namespace": "demo", "uid": %[2]q, "resourceVersion": "%[3]d", "generation": 2,
    "creationTimestamp": "2026-03-01T10:00:00Z", "finalizers": ["karmadaflow.io/mcs"], "labels": {"team": "storefront"},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
    "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "networking.karmada.io/v1alpha1", "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:types": {}}}}]},
  "spec": {"types": ["CrossCluster"], "providerClusters": %[4]s, "consumerClusters": %[5]s, "ports": [{"name": "http", "port": 80}]},
  "status": {"loadBalancer": {}, "conditions": [
    {"type": "ServiceApplied", "status": "True", "reason": "ServiceAppliedSuccess", "message": "", "observedGeneration": 2, "lastTransitionTime": "2026-03-01T10:00:01Z"},
    {"type": "EndpointSliceApplied", "status": "True", "reason": %[6]q, "message": "", "observedGeneration": 2, "lastTransitionTime": "2026-03-01T10:00:02Z"}
  ]}
}`, i, uid(i, 12), 500000+i, providers, consumers, appliedReason)
}

// clusterJSON is a Cluster with what Karmada's cluster status controller reports of it.
func clusterJSON(name, ready string) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
  "metadata": {"name": %[1]q, "uid": %[2]q, "resourceVersion": "600001", "generation": 5, "creationTimestamp": "2026-03-01T09:00:00Z",
    "finalizers": ["karmada.io/cluster-controller"], "labels": {"region": "eu"},
    "managedFields": [{"manager": "karmadactl", "operation": "Update", "apiVersion": "cluster.karmada.io/v1alpha1", "time": "2026-03-01T09:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:apiEndpoint": {}, "f:secretRef": {}}}}]},
  "spec": {"id": %[2]q, "apiEndpoint": "https://127.0.0.1:6443", "secretRef": {"namespace": "karmada-cluster", "name": %[1]q},
    "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "%[1]s-impersonator"}, "syncMode": "Push",
    "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0", "max": "4Gi"}]}]},
  "status": {
    "kubernetesVersion": "v1.36.0",
    "apiEnablements": [{"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}, {"name": "services", "kind": "Service"}]},
      {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
    "conditions": [{"type": "Ready", "status": %[3]q, "reason": "ClusterReady", "message": "cluster is healthy and ready to accept workloads", "lastTransitionTime": "2026-03-01T09:00:10Z"}],
    "nodeSummary": {"totalNum": 3, "readyNum": 3},
    "resourceSummary": {"allocatable": {"cpu": "12", "memory": "48Gi", "pods": "330"}, "allocated": {"cpu": "2", "memory": "4Gi", "pods": "20"}}
  }
}`, name, uid(len(name), 13), ready)
}

// karmadaJSON is a Karmada object of the host cluster.
func karmadaJSON(name string, labels string) []byte {
	return fmt.Appendf(nil, `{
  "apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada",
  "metadata": {"name": %[1]q, "namespace": "tenant1", "uid": %[2]q, "resourceVersion": "700001", "generation": 2,
    "finalizers": ["operator.karmada.io/finalizer"], "labels": %[3]s,
    "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "operator.karmada.io/v1alpha1", "time": "2026-03-01T09:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
  "spec": {"components": {"karmadaAPIServer": {"serviceType": "NodePort"}}},
  "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True", "reason": "Completed", "message": "", "lastTransitionTime": "2026-03-01T09:10:00Z"}],
    "apiServerService": {"name": "%[1]s-karmada-apiserver", "ports": [{"port": 5443}]}}
}`, name, uid(len(name), 14), labels)
}

// provisionedKarmadaJSON is a Karmada whose provisioning workflow reported the expiry of its
// certificates, one item per Secret key.
func provisionedKarmadaJSON(name string) []byte {
	var items []string
	for _, cert := range []string{
		"karmada-cert/apiserver.crt", "karmada-cert/front-proxy-client.crt", "karmada-cert/karmada.crt",
		"karmada-etcd-cert/etcd-server.crt", "karmada-etcd-cert/etcd-client.crt", "karmada-webhook-cert/tls.crt",
		"karmada-admin-config/kubeconfig", "karmada-scheduler-config/kubeconfig", "karmada-controller-manager-config/kubeconfig",
		"karmada-kube-controller-manager-config/kubeconfig", "karmada-aggregated-apiserver-config/kubeconfig",
	} {
		items = append(items, fmt.Sprintf(`{"name": %q, "notAfter": "2027-03-01T09:00:00Z"}`, cert))
	}
	return fmt.Appendf(nil, `{
  "apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada",
  "metadata": {"name": %[1]q, "namespace": "tenant1", "uid": %[2]q, "resourceVersion": "700002", "generation": 2,
    "finalizers": ["operator.karmada.io/finalizer"],
    "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "operator.karmada.io/v1alpha1", "time": "2026-03-01T09:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
  "spec": {"components": {"karmadaAPIServer": {"serviceType": "NodePort"}}},
  "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True", "reason": "Completed", "message": "", "lastTransitionTime": "2026-03-01T09:10:00Z"}],
    "apiServerService": {"name": "%[1]s-karmada-apiserver", "ports": [{"port": 5443}]}, "apiServerEndpoint": "https://172.18.0.2:32443",
    "certificates": {"notAfter": "2027-03-01T09:00:00Z", "renewalTime": "2026-11-01T09:00:00Z", "items": [%[3]s]}}
}`, name, uid(len(name), 15), strings.Join(items, ", "))
}
