// Package crds embeds the Karmada CRDs that belong in a Karmada control plane, for the
// provisioning of new control planes (the CRDs of standalone mode and the host cluster's
// Karmada CRD are not among them), and the ResourceRegistry CRD whose schema the search API
// serves and validates by.
package crds

import "embed"

// ControlPlane holds the YAML files of the CRDs installed into a new Karmada control plane.
//
//go:embed networking.karmada.io_multiclusterservices.yaml work.karmada.io_works.yaml
var ControlPlane embed.FS

// ResourceRegistry is the YAML of the ResourceRegistry CRD: its schema is the one the search
// API (proxy/searchapi) validates and publishes, so both modes accept the same objects.
//
//go:embed search.karmada.io_resourceregistries.yaml
var ResourceRegistry []byte
