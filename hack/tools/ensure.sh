#!/usr/bin/env bash
# ensure.sh TOOL...: builds each named tool into bin/ at the version pinned in versions.mk,
# skipping a tool whose binary in bin/ already carries that version.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
tools_mod="$root/hack/tools"
temporal_mod="$tools_mod/temporal"
devserver_mod="$tools_mod/devserver"
networkproxy_mod="$tools_mod/networkproxy"
mkdir -p "$bin"
eval "$(sed -n 's/^\([A-Z_]*\) *:= *\(.*\)$/\1=\2/p' "$tools_mod/versions.mk")"
# The tools link without symbol table and DWARF (-s -w): nobody debugs them, and linking
# kube-apiserver took 7.4 s of CPU instead of 12.8 s (106 MB instead of 151 MB).
STRIP="-s -w"

# has_version BINARY MODULE VERSION: the binary was built with MODULE at VERSION.
has_version() {
  [ -x "$bin/$1" ] && go version -m "$bin/$1" 2>/dev/null |
    grep -Eq "^[[:space:]]+(mod|dep)[[:space:]]+$2[[:space:]]+$3([[:space:]]|$)"
}

# sync_tools_module makes hack/tools/go.mod pin the Kubernetes, etcd and KWOK versions of
# versions.mk.
sync_tools_module() {
  local staging="v0.${KUBERNETES_VERSION#v1.}"
  local current
  current=$(cd "$tools_mod" && go list -m -f '{{.Path}} {{.Version}}' k8s.io/kubernetes go.etcd.io/etcd/server/v3 sigs.k8s.io/kwok)
  if [ "$current" != "k8s.io/kubernetes $KUBERNETES_VERSION"$'\n'"go.etcd.io/etcd/server/v3 $ETCD_VERSION"$'\n'"sigs.k8s.io/kwok $KWOK_VERSION" ]; then
    echo "hack/tools: pinning k8s.io/kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION"
    (cd "$tools_mod" &&
      go mod edit -require="k8s.io/kubernetes@$KUBERNETES_VERSION" -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
        -require="sigs.k8s.io/kwok@$KWOK_VERSION" &&
      sed -i -E "s#^(replace )?([[:space:]]*)(k8s\.io/[a-z0-9-]+) => (k8s\.io/[a-z0-9-]+) v0\.[0-9]+\.[0-9]+\$#\1\2\3 => \4 $staging#" go.mod &&
      go mod tidy)
  fi
}

# sync_temporal_module makes hack/tools/temporal/go.mod pin the Temporal versions of versions.mk.
sync_temporal_module() {
  local current
  current=$(cd "$temporal_mod" && go list -m -f '{{.Path}} {{.Version}}' go.temporal.io/server github.com/temporalio/ui-server/v2)
  if [ "$current" != "go.temporal.io/server $TEMPORAL_SERVER_VERSION"$'\n'"github.com/temporalio/ui-server/v2 $TEMPORAL_UI_SERVER_VERSION" ]; then
    echo "hack/tools/temporal: pinning go.temporal.io/server $TEMPORAL_SERVER_VERSION, ui-server $TEMPORAL_UI_SERVER_VERSION"
    (cd "$temporal_mod" &&
      go mod edit -require="go.temporal.io/server@$TEMPORAL_SERVER_VERSION" -require="github.com/temporalio/ui-server/v2@$TEMPORAL_UI_SERVER_VERSION" &&
      go mod tidy)
  fi
}

build_temporal() { # build_temporal BINARY MODULE VERSION PACKAGE: builds from hack/tools/temporal
  has_version "$1" "$2" "$3" && return
  sync_temporal_module
  echo "building $1 ($2 $3)"
  (cd "$temporal_mod" && go build -ldflags "$STRIP" -o "$bin/$1" "$4")
}

# sync_devserver_module makes hack/tools/devserver/go.mod pin the CLI and SQLite driver versions
# of versions.mk.
sync_devserver_module() {
  local current
  current=$(cd "$devserver_mod" && go list -m -f '{{.Path}} {{.Version}}' github.com/temporalio/cli modernc.org/sqlite)
  if [ "$current" != "github.com/temporalio/cli $TEMPORAL_CLI_VERSION"$'\n'"modernc.org/sqlite $TEMPORAL_DEV_SQLITE_VERSION" ]; then
    echo "hack/tools/devserver: pinning github.com/temporalio/cli $TEMPORAL_CLI_VERSION, modernc.org/sqlite $TEMPORAL_DEV_SQLITE_VERSION"
    (cd "$devserver_mod" &&
      go mod edit -require="github.com/temporalio/cli@$TEMPORAL_CLI_VERSION" -require="modernc.org/sqlite@$TEMPORAL_DEV_SQLITE_VERSION" &&
      go mod tidy)
  fi
}

build_devserver() { # the temporal CLI (its dev server) from hack/tools/devserver
  has_version temporal github.com/temporalio/cli "$TEMPORAL_CLI_VERSION" &&
    has_version temporal modernc.org/sqlite "$TEMPORAL_DEV_SQLITE_VERSION" && return
  sync_devserver_module
  echo "building temporal (github.com/temporalio/cli $TEMPORAL_CLI_VERSION, modernc.org/sqlite $TEMPORAL_DEV_SQLITE_VERSION)"
  (cd "$devserver_mod" && go build -ldflags "$STRIP" -o "$bin/temporal" github.com/temporalio/cli/cmd/temporal)
}

# reports_kubernetes_version NAME: the Kubernetes command in bin/ reports the pinned version,
# so it was built with the version stamp. The binary says it, not its build information: a
# -trimpath build (make's builds are) records no -ldflags there.
reports_kubernetes_version() {
  if [ "$1" = kubectl ]; then
    "$bin/kubectl" version --client 2>/dev/null | grep -qx "Client Version: $KUBERNETES_VERSION"
  else
    "$bin/$1" --version 2>/dev/null | grep -qx "Kubernetes $KUBERNETES_VERSION"
  fi
}

# build_kubernetes TOOL...: the Kubernetes commands, etcd and KWOK (all from hack/tools) that
# lack their pinned version. The Kubernetes commands and etcd build in one go build: measured
# cold on 2 cores, one build of all five takes 401 s where five builds one after the other took
# 527 s. KWOK builds after them, without their version stamp, and reuses their compiled
# Kubernetes libraries: the module gives both one version of each.
build_kubernetes() {
  # A module build carries no version; stamp it as Kubernetes' own build does, so that /version
  # and kubectl report the real one.
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local stamp="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  local missing=() pkgs=() name
  local kwok=""
  for name in "$@"; do
    if [ "$name" = kwok ]; then
      has_version kwok sigs.k8s.io/kwok "$KWOK_VERSION" && continue
      kwok=sigs.k8s.io/kwok/cmd/kwok
    elif [ "$name" = etcd ]; then
      has_version etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" && continue
      pkgs+=(./etcd)
    else
      has_version "$name" k8s.io/kubernetes "$KUBERNETES_VERSION" && reports_kubernetes_version "$name" && continue
      pkgs+=("k8s.io/kubernetes/cmd/$name")
    fi
    missing+=("$name")
  done
  [ ${#missing[@]} -eq 0 ] && return
  sync_tools_module
  echo "building ${missing[*]} (Kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, KWOK $KWOK_VERSION)"
  local out; out=$(mktemp -d)
  [ ${#pkgs[@]} -eq 0 ] || (cd "$tools_mod" && go build -ldflags "$stamp $STRIP" -o "$out/" "${pkgs[@]}")
  [ -z "$kwok" ] || (cd "$tools_mod" && go build -ldflags "$STRIP" -o "$out/" "$kwok")
  for name in "${missing[@]}"; do mv "$out/$name" "$bin/$name"; done
  rmdir "$out"
}

# sync_networkproxy_module makes hack/tools/networkproxy/go.mod pin NETWORK_PROXY_VERSION.
sync_networkproxy_module() {
  local current
  current=$(cd "$networkproxy_mod" && go list -m -f '{{.Version}}' sigs.k8s.io/apiserver-network-proxy)
  if [ "$current" != "$NETWORK_PROXY_VERSION" ]; then
    echo "hack/tools/networkproxy: pinning sigs.k8s.io/apiserver-network-proxy $NETWORK_PROXY_VERSION"
    (cd "$networkproxy_mod" &&
      go mod edit -require="sigs.k8s.io/apiserver-network-proxy@$NETWORK_PROXY_VERSION" &&
      go mod tidy)
  fi
}

# build_networkproxy TOOL...: apiserver-network-proxy's proxy-server (cmd/server) and
# proxy-agent (cmd/agent) that lack the pinned version, in one go build (they share most of
# their packages): measured cold on 2 cores (empty build cache), both take about 5 min.
build_networkproxy() {
  local missing=() pkgs=() name
  for name in "$@"; do
    has_version "$name" sigs.k8s.io/apiserver-network-proxy "$NETWORK_PROXY_VERSION" && continue
    missing+=("$name")
    pkgs+=("sigs.k8s.io/apiserver-network-proxy/cmd/${name#proxy-}")
  done
  [ ${#missing[@]} -eq 0 ] && return
  sync_networkproxy_module
  echo "building ${missing[*]} (apiserver-network-proxy $NETWORK_PROXY_VERSION)"
  local out; out=$(mktemp -d)
  (cd "$networkproxy_mod" && go build -ldflags "$STRIP" -o "$out/" "${pkgs[@]}")
  for name in "${missing[@]}"; do mv "$out/${name#proxy-}" "$bin/$name"; done
  rmdir "$out"
}

install_module() { # install_module BINARY MODULE PACKAGE VERSION [BUILD FLAG...]
  has_version "$1" "$2" "$4" && return
  echo "building $1 ($2 $4)"
  GOBIN="$bin" go install -ldflags "$STRIP" "${@:5}" "$3@$4"
}

# Karmada's components build from its source (vendored, no download): KARMADA_SRC is a
# directory holding karmada-src-<commit>.tar.xz (default ../shared/karmada, checked against
# KARMADA_SOURCE_CHECKSUM and unpacked once into bin/) or a Karmada checkout of KARMADA_COMMIT.
KARMADA_SRC=${KARMADA_SRC:-$root/../shared/karmada}
karmada_tree=""
karmada_source() { # sets karmada_tree to the unpacked or checked-out source
  [ -n "$karmada_tree" ] && return
  if [ -f "$KARMADA_SRC/go.mod" ]; then
    karmada_tree=$(cd "$KARMADA_SRC" && pwd)
    return
  fi
  local tarball="$KARMADA_SRC/karmada-src-$KARMADA_COMMIT.tar.xz"
  local dest="$bin/karmada-src-$KARMADA_COMMIT"
  if [ ! -f "$dest/.unpacked" ]; then
    if [ ! -f "$tarball" ]; then
      echo "ensure.sh: no Karmada source at $KARMADA_SRC (set KARMADA_SRC to ../shared/karmada or a Karmada checkout of $KARMADA_COMMIT)" >&2
      exit 2
    fi
    echo "$KARMADA_SOURCE_CHECKSUM  $tarball" | sha256sum --check --status ||
      { echo "ensure.sh: $tarball does not match KARMADA_SOURCE_CHECKSUM" >&2; exit 2; }
    rm -rf "$dest" && mkdir -p "$dest"
    tar -xJf "$tarball" -C "$dest"
    touch "$dest/.unpacked"
  fi
  karmada_tree="$dest/karmada"
}

# The Karmada components and their main packages.
declare -A karmada_packages=(
  [karmada-controller-manager]=./cmd/controller-manager [karmada-scheduler]=./cmd/scheduler
  [karmada-webhook]=./cmd/webhook [karmada-aggregated-apiserver]=./cmd/aggregated-apiserver
  [karmada-agent]=./cmd/agent [karmada-search]=./cmd/karmada-search
  [karmada-descheduler]=./cmd/descheduler [karmada-metrics-adapter]=./cmd/metrics-adapter
)
KARMADA_STAMP="-X github.com/karmada-io/karmada/pkg/version.gitVersion=$KARMADA_VERSION -X github.com/karmada-io/karmada/pkg/version.gitCommit=$KARMADA_COMMIT"

# build_karmada BINARY...: one go build for all that lack the pinned stamp. Its GOFLAGS
# (-mod=vendor, and not make's -trimpath) keep -ldflags, and so the stamp, in the build
# information that the check reads.
build_karmada() {
  local missing=() name
  for name in "$@"; do
    [ -x "$bin/$name" ] && go version -m "$bin/$name" 2>/dev/null | grep -q -- "gitCommit=$KARMADA_COMMIT" && continue
    missing+=("$name")
  done
  [ ${#missing[@]} -eq 0 ] && return
  karmada_source
  echo "building ${missing[*]} (Karmada $KARMADA_COMMIT)"
  local out; out=$(mktemp -d)
  local pkgs=(); for name in "${missing[@]}"; do pkgs+=("${karmada_packages[$name]}"); done
  (cd "$karmada_tree" && GOFLAGS=-mod=vendor go build -ldflags "$KARMADA_STAMP $STRIP" -o "$out/" "${pkgs[@]}")
  for name in "${missing[@]}"; do
    local pkg=${karmada_packages[$name]}
    mv "$out/${pkg##*/}" "$bin/$name"
  done
  rmdir "$out"
}

karmada_wanted=()
kubernetes_wanted=()
networkproxy_wanted=()
for tool in "$@"; do
  case "$tool" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|etcd|kwok) kubernetes_wanted+=("$tool") ;;
    temporal) build_devserver ;;
    temporal-server) build_temporal temporal-server go.temporal.io/server "$TEMPORAL_SERVER_VERSION" go.temporal.io/server/cmd/server ;;
    temporal-sql-tool) build_temporal temporal-sql-tool go.temporal.io/server "$TEMPORAL_SERVER_VERSION" go.temporal.io/server/cmd/tools/sql ;;
    temporal-ui-server) build_temporal temporal-ui-server github.com/temporalio/ui-server/v2 "$TEMPORAL_UI_SERVER_VERSION" github.com/temporalio/ui-server/v2/cmd/server ;;
    proxy-server|proxy-agent) networkproxy_wanted+=("$tool") ;;
    controller-gen) install_module controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION" ;;
    helm) install_module helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
    promtool) install_module promtool github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION" -tags=remove_all_sd ;;
    workflowcheck) install_module workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck "$WORKFLOWCHECK_VERSION" ;;
    ko) install_module ko github.com/google/ko github.com/google/ko "$KO_VERSION" ;;
    crane) install_module crane github.com/google/go-containerregistry github.com/google/go-containerregistry/cmd/crane "$CRANE_VERSION" ;;
    karmada-*)
      [ -n "${karmada_packages[$tool]:-}" ] || { echo "ensure.sh: unknown tool $tool" >&2; exit 2; }
      karmada_wanted+=("$tool") ;;
    *) echo "ensure.sh: unknown tool $tool" >&2; exit 2 ;;
  esac
done
[ ${#kubernetes_wanted[@]} -eq 0 ] || build_kubernetes "${kubernetes_wanted[@]}"
[ ${#karmada_wanted[@]} -eq 0 ] || build_karmada "${karmada_wanted[@]}"
[ ${#networkproxy_wanted[@]} -eq 0 ] || build_networkproxy "${networkproxy_wanted[@]}"
