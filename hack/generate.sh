#!/usr/bin/env bash
# generate.sh regenerates, from the Go types in api/, the deepcopy code (zz_generated.deepcopy.go
# in each package) and the CRDs in deploy/crds/, copied into the Helm chart's files/crds/. `make generate` builds bin/controller-gen at
# the pinned version first; run from anywhere.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

controller_gen=bin/controller-gen
if [ ! -x "$controller_gen" ]; then
  echo "generate.sh: $controller_gen is missing; run 'make generate' (it builds it)" >&2
  exit 1
fi

"$controller_gen" object:headerFile=hack/boilerplate.go.txt paths=./api/...

# Generate into a scratch directory and swap the YAML files in, so deploy/crds keeps its
# README and loses CRDs of types that no longer exist.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# generateEmbeddedObjectMeta keeps the metadata of embedded templates (the etcd volume claim
# template of Karmada) instead of pruning it.
"$controller_gen" crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config="$out"
# Karmada serves these groups from its aggregated API servers; the CRDs are for standalone
# mode only (see deploy/crds/README.md). Say so at the top of the file too.
for f in cluster.karmada.io_clusters.yaml search.karmada.io_resourceregistries.yaml; do
  sed -i '1i # STANDALONE MODE ONLY: never install this CRD beside a real Karmada (see README.md).' "$out/$f"
done
rm -f deploy/crds/*.yaml
cp "$out"/*.yaml deploy/crds/
# The Helm chart carries the same files (a chart reads files inside its own directory only).
chart_crds=deploy/charts/karmadaflow/files/crds
mkdir -p "$chart_crds"
rm -f "$chart_crds"/*.yaml
cp deploy/crds/*.yaml "$chart_crds"/
