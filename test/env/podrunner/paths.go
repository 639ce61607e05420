package podrunner

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Nothing is mounted into a played process's file system besides /etc/hosts and
// /etc/resolv.conf: a path inside a volume mount, wherever it appears in an argument, an env
// value or the working directory, is rewritten to the directory standing for the volume.

// mountPoint maps a container's mount path to the directory standing for it.
type mountPoint struct{ container, host string }

// pathMap rewrites container paths into the pod's directories, longest mount path first.
type pathMap []mountPoint

// mounts is the path map of a container's volume mounts.
func (p *pod) mounts(c corev1.Container) (pathMap, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range p.object().Spec.Volumes {
		volumes[v.Name] = v
	}
	var m pathMap
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no such volume", vm.Name)
		}
		host := p.volumeDir(v)
		if vm.SubPath != "" {
			sub := filepath.Join(host, vm.SubPath)
			if !strings.HasPrefix(sub, host+string(filepath.Separator)) {
				return nil, fmt.Errorf("volume mount %s: subPath %q leaves the volume", vm.Name, vm.SubPath)
			}
			host = sub
		}
		if mountPath := filepath.Clean(vm.MountPath); mountPath != "/" {
			m = append(m, mountPoint{container: mountPath, host: host})
		}
	}
	sort.SliceStable(m, func(i, j int) bool { return len(m[i].container) > len(m[j].container) })
	return m, nil
}

// rewrite replaces every path of s that starts with a mount path (the whole mount path or a
// path below it, not a longer name such as /etc/karmada-x for /etc/karmada) by the
// directory standing for it: --tls-cert-file=/etc/karmada/pki/apiserver.crt becomes
// --tls-cert-file=<pod dir>/volumes/cert/apiserver.crt.
func (m pathMap) rewrite(s string) string {
	if len(m) == 0 || !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '/' && (i == 0 || !isPathByte(s[i-1])) {
			if mp, ok := m.at(s[i:]); ok {
				b.WriteString(mp.host)
				i += len(mp.container)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// at finds the mount whose path starts s, ending there or at a '/' or a non-path byte.
func (m pathMap) at(s string) (mountPoint, bool) {
	for _, mp := range m {
		if !strings.HasPrefix(s, mp.container) {
			continue
		}
		if rest := s[len(mp.container):]; rest == "" || rest[0] == '/' || !isPathByte(rest[0]) {
			return mp, true
		}
	}
	return mountPoint{}, false
}

func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-/", c) >= 0
}
