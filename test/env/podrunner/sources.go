package podrunner

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Where env values and volume files come from: Secrets and ConfigMaps (from the informers'
// caches) and the pod itself (the downward API).

// secretData is the data of a Secret of the pod's namespace; errOptionalMissing if it does
// not exist and optional.
func (p *pod) secretData(name string, optional *bool) (map[string][]byte, error) {
	s, err := p.r.secrets.Secrets(p.namespace).Get(name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, errOptionalMissing
	}
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return s.Data, nil
}

// configMapData is the data and binary data of a ConfigMap of the pod's namespace;
// errOptionalMissing if it does not exist and optional.
func (p *pod) configMapData(name string, optional *bool) (map[string][]byte, error) {
	cm, err := p.r.configMaps.ConfigMaps(p.namespace).Get(name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, errOptionalMissing
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %q: %w", name, err)
	}
	data := maps.Clone(cm.BinaryData)
	if data == nil {
		data = map[string][]byte{}
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return data, nil
}

// envSource is the variables of an envFrom source.
func (p *pod) envSource(from corev1.EnvFromSource) (map[string]string, error) {
	var data map[string][]byte
	var err error
	switch {
	case from.SecretRef != nil:
		data, err = p.secretData(from.SecretRef.Name, from.SecretRef.Optional)
	case from.ConfigMapRef != nil:
		data, err = p.configMapData(from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
	}
	if err == errOptionalMissing {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range data {
		out[k] = string(v)
	}
	return out, nil
}

// envValue is the value of an env var's valueFrom.
func (p *pod) envValue(obj *corev1.Pod, spec corev1.Container, src *corev1.EnvVarSource) (string, error) {
	var data map[string][]byte
	var key string
	var optional *bool
	var err error
	switch {
	case src.FieldRef != nil:
		return p.fieldValue(obj, src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		key, optional = src.SecretKeyRef.Key, src.SecretKeyRef.Optional
		data, err = p.secretData(src.SecretKeyRef.Name, optional)
	case src.ConfigMapKeyRef != nil:
		key, optional = src.ConfigMapKeyRef.Key, src.ConfigMapKeyRef.Optional
		data, err = p.configMapData(src.ConfigMapKeyRef.Name, optional)
	default:
		return "", fmt.Errorf("only fieldRef, secretKeyRef and configMapKeyRef are supported")
	}
	if err == errOptionalMissing {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	value, ok := data[key]
	if !ok && (optional == nil || !*optional) {
		return "", fmt.Errorf("key %q not found", key)
	}
	return string(value), nil
}

// fieldValue is a downward API field of the pod. The pod IP is its loopback address: where
// its processes listen.
func (p *pod) fieldValue(obj *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return obj.Name, nil
	case "metadata.namespace":
		return obj.Namespace, nil
	case "metadata.uid":
		return string(obj.UID), nil
	case "metadata.labels":
		return formatMap(obj.Labels), nil
	case "metadata.annotations":
		return formatMap(obj.Annotations), nil
	case "spec.nodeName":
		return obj.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return obj.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return p.r.opts.NodeIP, nil
	case "status.podIP", "status.podIPs":
		return p.addr.loopback.String(), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": obj.Labels, "metadata.annotations": obj.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("field %q is not supported", path)
}

// formatMap renders labels or annotations as the downward API does: key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}
