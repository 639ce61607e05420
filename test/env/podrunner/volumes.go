package podrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Volumes are directories on this machine: Secret, ConfigMap, downward API, projected and
// emptyDir volumes under <Dir>/<namespace>/<pod>/volumes/<volume> (gone with the pod, kept
// across container restarts); hostPath volumes under <Dir>/hostpath/<path> and claims under
// <Dir>/claims/<namespace>/<claim>, which outlive the pod as a node's disk would. Nothing
// is mounted: every argument, env value and working directory naming a path inside a mount
// is rewritten to the directory (see pathMap).

// file is one file of a Secret, ConfigMap, downward API or projected volume.
type file struct {
	data []byte
	mode os.FileMode
}

// token is a projected service-account token and when to ask for a new one.
type token struct {
	value     []byte
	refreshAt time.Time
}

// volumeDir is the directory standing for a volume.
func (p *pod) volumeDir(v corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		return filepath.Join(p.r.opts.Dir, "hostpath", filepath.Clean("/"+v.HostPath.Path))
	case v.PersistentVolumeClaim != nil:
		return filepath.Join(p.r.opts.Dir, "claims", p.namespace, v.PersistentVolumeClaim.ClaimName)
	}
	return filepath.Join(p.dir, "volumes", v.Name)
}

// writeVolumes creates the pod's volume directories and writes the files of its Secret,
// ConfigMap, downward API and projected volumes as they are now, replacing changed files
// atomically (a re-issued certificate is picked up by processes that reload their files).
func (p *pod) writeVolumes(obj *corev1.Pod) error {
	var errs []error
	for _, v := range obj.Spec.Volumes {
		if err := p.writeVolume(obj, v); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (p *pod) writeVolume(obj *corev1.Pod, v corev1.Volume) error {
	dir := p.volumeDir(v)
	var files map[string]file
	var err error
	switch {
	case v.EmptyDir != nil, v.PersistentVolumeClaim != nil:
		return os.MkdirAll(dir, 0o777)
	case v.HostPath != nil:
		t := v.HostPath.Type
		if t == nil || (*t != corev1.HostPathFile && *t != corev1.HostPathFileOrCreate) {
			return os.MkdirAll(dir, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dir, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case v.Secret != nil:
		files, err = p.secretFiles(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode)
	case v.ConfigMap != nil:
		files, err = p.configMapFiles(v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode)
	case v.DownwardAPI != nil:
		files, err = p.downwardAPIFiles(obj, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		files, err = p.projectedFiles(obj, v.Projected)
	default:
		return errors.New("only secret, configMap, downwardAPI, projected, emptyDir, hostPath and persistentVolumeClaim volumes are supported")
	}
	if err != nil {
		return err
	}
	return syncFiles(dir, files)
}

func (p *pod) secretFiles(name string, items []corev1.KeyToPath, optional *bool, mode *int32) (map[string]file, error) {
	data, err := p.secretData(name, optional)
	if err == errOptionalMissing {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, err
	}
	return keyFiles(data, items, optional, mode)
}

func (p *pod) configMapFiles(name string, items []corev1.KeyToPath, optional *bool, mode *int32) (map[string]file, error) {
	data, err := p.configMapData(name, optional)
	if err == errOptionalMissing {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, err
	}
	return keyFiles(data, items, optional, mode)
}

// keyFiles are the files of a Secret's or ConfigMap's data: every key, or the items.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, optional *bool, defaultMode *int32) (map[string]file, error) {
	files := map[string]file{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = file{data: v, mode: fileMode(nil, defaultMode)}
		}
		return files, nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return nil, fmt.Errorf("key %q not found", item.Key)
		}
		files[item.Path] = file{data: v, mode: fileMode(item.Mode, defaultMode)}
	}
	return files, nil
}

func fileMode(mode, defaultMode *int32) os.FileMode {
	switch {
	case mode != nil:
		return os.FileMode(*mode)
	case defaultMode != nil:
		return os.FileMode(*defaultMode)
	}
	return 0o644
}

func (p *pod) downwardAPIFiles(obj *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) (map[string]file, error) {
	files := map[string]file{}
	for _, item := range items {
		if item.FieldRef == nil {
			return nil, fmt.Errorf("downward API file %s: only fieldRef is supported", item.Path)
		}
		value, err := p.fieldValue(obj, item.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		files[item.Path] = file{data: []byte(value), mode: fileMode(item.Mode, defaultMode)}
	}
	return files, nil
}

func (p *pod) projectedFiles(obj *corev1.Pod, v *corev1.ProjectedVolumeSource) (map[string]file, error) {
	files := map[string]file{}
	for _, src := range v.Sources {
		var part map[string]file
		var err error
		switch {
		case src.Secret != nil:
			part, err = p.secretFiles(src.Secret.Name, src.Secret.Items, src.Secret.Optional, v.DefaultMode)
		case src.ConfigMap != nil:
			part, err = p.configMapFiles(src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, v.DefaultMode)
		case src.DownwardAPI != nil:
			part, err = p.downwardAPIFiles(obj, src.DownwardAPI.Items, v.DefaultMode)
		case src.ServiceAccountToken != nil:
			var value []byte
			value, err = p.serviceAccountToken(obj, src.ServiceAccountToken)
			part = map[string]file{src.ServiceAccountToken.Path: {data: value, mode: fileMode(nil, v.DefaultMode)}}
		default:
			err = errors.New("only secret, configMap, downwardAPI and serviceAccountToken projections are supported")
		}
		if err != nil {
			return nil, err
		}
		for k, f := range part {
			files[k] = f
		}
	}
	return files, nil
}

// serviceAccountToken asks for a token bound to the pod, again once 80% of its lifetime
// has passed, as the kubelet does.
func (p *pod) serviceAccountToken(obj *corev1.Pod, src *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	p.mu.Lock()
	t, ok := p.tokens[src.Path]
	p.mu.Unlock()
	if ok && time.Now().Before(t.refreshAt) {
		return t.value, nil
	}
	expiration := int64(3600)
	if src.ExpirationSeconds != nil {
		expiration = *src.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiration,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: obj.Name, UID: obj.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	account := obj.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	resp, err := p.r.opts.Client.CoreV1().ServiceAccounts(obj.Namespace).CreateToken(ctx, account, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token of service account %s: %w", account, err)
	}
	lifetime := time.Until(resp.Status.ExpirationTimestamp.Time)
	t = token{value: []byte(resp.Status.Token), refreshAt: time.Now().Add(lifetime * 8 / 10)}
	p.mu.Lock()
	p.tokens[src.Path] = t
	p.mu.Unlock()
	return t.value, nil
}

// syncFiles makes dir hold exactly files: changed files are replaced by a rename (readers
// see the old or the new content, never a partial one), others removed.
func syncFiles(dir string, files map[string]file) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cleaned := map[string]file{}
	for rel, f := range files {
		cleaned[filepath.Clean(rel)] = f
	}
	files = cleaned
	for rel, f := range files {
		path := filepath.Join(dir, rel)
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return fmt.Errorf("file path %q leaves the volume", rel)
		}
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			if st, err := os.Stat(path); err == nil && st.Mode().Perm() == f.mode.Perm() {
				continue
			}
		}
		if err := writeAtomic(path, f); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if rel, _ := filepath.Rel(dir, path); !hasFile(files, rel) {
			return os.Remove(path)
		}
		return nil
	})
}

func hasFile(files map[string]file, rel string) bool {
	_, ok := files[rel]
	return ok
}

func writeAtomic(path string, f file) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(f.data)
	err = errors.Join(err, tmp.Chmod(f.mode.Perm()), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
