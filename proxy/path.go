// Package proxy serves the global resource proxy: one URL through which kubectl and client-go
// reach resources in the Karmada control plane and in every member cluster, always as the
// caller.
package proxy

import (
	"fmt"
	"net/url"
	"strings"
)

// BasePath is the proxy's URL prefix; any Kubernetes API path follows it.
const BasePath = "/apis/search.karmada.io/v1alpha1/proxying/" + Name + "/proxy"

// Name is the one name of the proxying resource the proxy answers to.
const Name = "karmada"

// Target is what a Kubernetes API path names.
type Target struct {
	// Path is the Kubernetes path after BasePath, always starting with "/", escaped as the
	// request's URL escapes it (url.URL.EscapedPath): a segment "a%2Fb" stays one segment.
	Path string
	// IsResource tells a resource path from a non-resource one (/api, /apis, /version, ...).
	IsResource bool
	// Watch is set for the legacy /watch/ form of a watch.
	Watch bool

	// The segments of Path, unescaped.
	Group, Version, Namespace, Resource, Name, Subresource string
}

// namespaceSubresources are the subresources of a Namespace, which the namespaced form of a
// path would otherwise read as a resource kind.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// ParsePath splits a request path of the proxy, escaped (url.URL.EscapedPath), into what it
// names: the path is split at its slashes, then each segment unescaped, so that an escaped
// "/", "?" or "#" stays inside its segment. It fails for a path outside BasePath and for
// segments that are not validly escaped or are, unescaped, empty, "." or "..".
func ParsePath(path string) (Target, error) {
	rest, ok := strings.CutPrefix(path, BasePath)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return Target{}, fmt.Errorf("path %q is not under %s", path, BasePath)
	}
	if rest == "" || rest == "/" {
		return Target{Path: "/"}, nil
	}
	t := Target{Path: rest}
	parts := strings.Split(strings.TrimSuffix(rest[1:], "/"), "/")
	for i, p := range parts {
		p, err := url.PathUnescape(p)
		if err != nil {
			return Target{}, fmt.Errorf("path %q: %w", rest, err)
		}
		if p == "" || p == "." || p == ".." {
			return Target{}, fmt.Errorf("path %q has an empty, \".\" or \"..\" segment", rest)
		}
		parts[i] = p
	}
	switch {
	case parts[0] == "api" && len(parts) >= 3:
		t.Version, parts = parts[1], parts[2:]
	case parts[0] == "apis" && len(parts) >= 4:
		t.Group, t.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, nil // discovery, /version, /openapi/..., /healthz: non-resource
	}
	t.IsResource = true
	if parts[0] == "watch" {
		t.Watch, parts = true, parts[1:]
		if len(parts) == 0 {
			return Target{}, fmt.Errorf("path %q names no resource to watch", rest)
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		t.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else {
			// The Namespace itself, or one of its subresources.
			t.Namespace = ""
		}
	}
	t.Resource = parts[0]
	if len(parts) > 1 {
		t.Name = parts[1]
	}
	if len(parts) > 2 {
		t.Subresource = parts[2]
	}
	return t, nil
}

// CollectionPath is the Kubernetes path of the target's collection in namespace ("" for all
// namespaces or a cluster-scoped resource), each segment escaped.
func (t Target) CollectionPath(namespace string) string {
	var b strings.Builder
	if t.Group == "" {
		b.WriteString("/api/" + url.PathEscape(t.Version))
	} else {
		b.WriteString("/apis/" + url.PathEscape(t.Group) + "/" + url.PathEscape(t.Version))
	}
	if namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(namespace))
	}
	b.WriteString("/" + url.PathEscape(t.Resource))
	return b.String()
}

// NamePath is the Kubernetes path of the named object, escaped, without subresource (nor the
// legacy /watch/ prefix).
func (t Target) NamePath() string {
	return t.CollectionPath(t.Namespace) + "/" + url.PathEscape(t.Name)
}

// ObjectPath is the Kubernetes path of the named object, escaped (without the legacy /watch/
// prefix).
func (t Target) ObjectPath() string {
	p := t.NamePath()
	if t.Subresource != "" {
		// Keep whatever follows the subresource (pods/x/proxy/a/b), as escaped as it came.
		name, sub := "/"+url.PathEscape(t.Name), "/"+url.PathEscape(t.Subresource)
		idx := strings.Index(t.Path, name+sub)
		if idx >= 0 {
			return p + t.Path[idx+len(name):]
		}
		p += sub
	}
	return p
}

// setEscapedPath sets u's path to escaped, an escaped path, keeping its escaping (u.RawPath):
// an escaped "/" stays inside its segment.
func setEscapedPath(u *url.URL, escaped string) error {
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return err
	}
	u.Path, u.RawPath = path, escaped
	return nil
}

// GroupVersion is the target's API version as apiVersion spells it.
func (t Target) GroupVersion() string {
	if t.Group == "" {
		return t.Version
	}
	return t.Group + "/" + t.Version
}
