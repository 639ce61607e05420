// Package crds embeds the ResourceRegistry CRD, whose schema the search API serves and
// validates by. (New Karmada control planes get Karmada's own CRDs, from its CRD tarball.)
package crds

import _ "embed"

// ResourceRegistry is the YAML of the ResourceRegistry CRD: its schema is the one the search
// API (proxy/searchapi) validates and publishes, so both modes accept the same objects.
//
//go:embed search.karmada.io_resourceregistries.yaml
var ResourceRegistry []byte
