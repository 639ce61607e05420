{{/* The namespace of every namespaced object. */}}
{{- define "karmadaflow.namespace" -}}
{{ .Values.namespace.name }}
{{- end }}

{{/* Labels of a component's objects: the component's name is the argument's .component. */}}
{{- define "karmadaflow.labels" -}}
app.kubernetes.io/name: karmadaflow
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Selector labels of a component's pods. */}}
{{- define "karmadaflow.selectorLabels" -}}
app.kubernetes.io/name: karmadaflow
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image of a component (worker or starter). */}}
{{- define "karmadaflow.image" -}}
{{ printf "%s/%s:%s" .root.Values.image.repository .component (.root.Values.image.tag | default .root.Chart.AppVersion) }}
{{- end }}

{{/* Whether the mode is besideKarmada; fails on an unknown mode or target. */}}
{{- define "karmadaflow.besideKarmada" -}}
{{- if not (has .Values.mode (list "standalone" "besideKarmada")) }}
{{- fail (printf "mode must be standalone or besideKarmada, got %q" .Values.mode) }}
{{- end }}
{{- if not (has .Values.target (list "host" "controlPlane" "member")) }}
{{- fail (printf "target must be host or controlPlane, or member for a Pull cluster's agent, got %q" .Values.target) }}
{{- end }}
{{- if eq .Values.mode "besideKarmada" }}true{{ end }}
{{- end }}

{{/* Whether Karmada provisioning is on: by default in standalone mode, on request (with a
selector) beside Karmada. */}}
{{- define "karmadaflow.provisioning" -}}
{{- $p := .Values.provisioning }}
{{- if include "karmadaflow.besideKarmada" . }}
{{- if $p.enabled }}
{{- if not $p.selector }}
{{- fail "provisioning.selector is required to enable provisioning beside Karmada: karmada-operator keeps the Karmada objects it does not match" }}
{{- end }}true
{{- end }}
{{- else if or (kindIs "invalid" $p.enabled) $p.enabled }}true
{{- end }}
{{- end }}

{{/* Capability flags, the same for the worker and the starter: the starter starts the
workflows of what it enables, the worker polls the task queues of what it enables. */}}
{{- define "karmadaflow.capabilityArgs" -}}
{{- $standalone := not (include "karmadaflow.besideKarmada" .) }}
- --enable-work-execution={{ $standalone }}
- --enable-cluster-health={{ $standalone }}
- --enable-provisioning={{ include "karmadaflow.provisioning" . | eq "true" }}
{{- end }}

{{/* Temporal flags of the worker, the starter and the bootstrap Job. */}}
{{- define "karmadaflow.temporalArgs" -}}
{{- $t := .Values.temporal }}
- --temporal-address={{ $t.address }}
- --temporal-namespace={{ $t.namespace }}
{{- if or $t.tls.enabled $t.apiKey.existingSecret }}
- --temporal-tls
{{- end }}
{{- if $t.tls.serverName }}
- --temporal-tls-server-name={{ $t.tls.serverName }}
{{- end }}
{{- if $t.tls.existingSecret }}
{{- if $t.tls.caKey }}
- --temporal-tls-ca-file=/etc/karmadaflow/temporal-tls/{{ $t.tls.caKey }}
{{- end }}
{{- if $t.tls.certKey }}
{{- if not $t.tls.keyKey }}
{{- fail "temporal.tls.keyKey must name the key of the client certificate's private key (or temporal.tls.certKey be empty)" }}
{{- end }}
- --temporal-tls-cert-file=/etc/karmadaflow/temporal-tls/{{ $t.tls.certKey }}
- --temporal-tls-key-file=/etc/karmadaflow/temporal-tls/{{ $t.tls.keyKey }}
{{- end }}
{{- end }}
{{- if $t.apiKey.existingSecret }}
- --temporal-api-key-file=/etc/karmadaflow/temporal-api-key/{{ $t.apiKey.key }}
{{- end }}
{{- end }}

{{/* Volume mounts of the Temporal credentials. */}}
{{- define "karmadaflow.temporalVolumeMounts" -}}
{{- $t := .Values.temporal }}
{{- if $t.tls.existingSecret }}
- name: temporal-tls
  mountPath: /etc/karmadaflow/temporal-tls
  readOnly: true
{{- end }}
{{- if $t.apiKey.existingSecret }}
- name: temporal-api-key
  mountPath: /etc/karmadaflow/temporal-api-key
  readOnly: true
{{- end }}
{{- end }}

{{/* Volumes of the Temporal credentials. */}}
{{- define "karmadaflow.temporalVolumes" -}}
{{- $t := .Values.temporal }}
{{- if $t.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ $t.tls.existingSecret }}
{{- end }}
{{- if $t.apiKey.existingSecret }}
- name: temporal-api-key
  secret:
    secretName: {{ $t.apiKey.existingSecret }}
{{- end }}
{{- end }}

{{/* The pod and container security settings of every karmadaflow container (restricted). */}}
{{- define "karmadaflow.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}
{{- define "karmadaflow.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* Fails when the worker would serve the proxy without a serving certificate its callers can
verify: they send bearer tokens over that connection. */}}
{{- define "karmadaflow.checkProxyTLS" -}}
{{- if and .Values.proxy.enabled (not .Values.proxy.tls.existingSecret) }}
{{- fail "proxy.tls.existingSecret is required with proxy.enabled: a kubernetes.io/tls Secret with the proxy's serving certificate, which callers verify before they send their bearer tokens (with cert-manager, the Secret of a Certificate for karmadaflow-proxy.<namespace>.svc)" }}
{{- end }}
{{- end }}

{{/* Whether the proxy is served as the search.karmada.io API; fails when it cannot be. */}}
{{- define "karmadaflow.searchAPI" -}}
{{- $s := .Values.proxy.searchAPI }}
{{- if $s.enabled }}
{{- if not .Values.proxy.enabled }}
{{- fail "proxy.searchAPI.enabled needs proxy.enabled" }}
{{- end }}
{{- if and (eq .Values.target "host") (not $s.etcd.servers) }}
{{- fail "proxy.searchAPI.etcd.servers is required: the search API keeps ResourceRegistries in etcd" }}
{{- end }}
{{- if and (eq .Values.target "controlPlane") (not $s.caBundle) (not $s.insecureSkipTLSVerify) }}
{{- fail "proxy.searchAPI.caBundle is required: the CA that verifies the proxy's serving certificate for the aggregator (or set proxy.searchAPI.insecureSkipTLSVerify=true to skip verification, as Karmada's own chart does for karmada-search)" }}
{{- end }}true
{{- end }}
{{- end }}

{{/* Fails unless .name, the value .value, is a Karmada Cluster's name: a DNS-1123 label of at
most 48 characters (it names the execution namespace karmada-es-<name>). */}}
{{- define "karmadaflow.checkClusterName" -}}
{{- if or (gt (len .name) 48) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .name)) }}
{{- fail (printf "%s must be a DNS-1123 label of at most 48 characters, as a Cluster's name is, got %q" .value .name) }}
{{- end }}
{{- end }}

{{/* The member cluster the agent runs in (target member): agent.cluster, required. */}}
{{- define "karmadaflow.agentCluster" -}}
{{- $cluster := .Values.agent.cluster | default "" | toString }}
{{- if not $cluster }}
{{- fail "agent.cluster is required with target member: the name of this member's Cluster in the Karmada control plane" }}
{{- end }}
{{- include "karmadaflow.checkClusterName" (dict "name" $cluster "value" "agent.cluster") }}
{{- $cluster }}
{{- end }}
