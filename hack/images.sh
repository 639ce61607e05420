#!/usr/bin/env bash
# images.sh: builds the worker and starter images with ko into .images/<component>.tar (image
# tarballs, tagged $IMAGE_REPO/<component>:$VERSION), without Docker and without pulling from a
# registry. The base image is built here from this machine's CA certificates and a passwd/group
# with the non-root user nonroot (65532, as in distroless), and handed to ko through a registry
# that crane serves on loopback for the length of the build: ko reads its base from a registry only.
# The Makefile passes VERSION (git describe), COMMIT and LDFLAGS (which stamp both into the binary).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${VERSION:?is unset (make images sets it)}" "${COMMIT:?is unset}" "${LDFLAGS:?is unset}"
IMAGE_REPO=${IMAGE_REPO:-karmadaflow}
PLATFORM=${PLATFORM:-linux/amd64}
out="$root/.images"
ca_bundle=/etc/ssl/certs/ca-certificates.crt # Debian's ca-certificates
nonroot=65532

hack/tools/ensure.sh ko crane
[ -s "$ca_bundle" ] || { echo "images.sh: $ca_bundle is missing (apt-get install ca-certificates)" >&2; exit 1; }

work=$(mktemp -d)
registry_pid=
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The commit's time dates the files and the images, so that a build of one commit is the same.
epoch=$(git log -1 --format=%ct)

# The base layer: CA certificates, passwd and group, a home for nonroot and a /tmp.
rootfs="$work/rootfs"
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/home/nonroot" "$rootfs/tmp"
cp "$ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
cat >"$rootfs/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:$nonroot:$nonroot:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<EOF
root:x:0:
nobody:x:65534:
nonroot:x:$nonroot:
EOF
chmod 0755 "$rootfs/etc" "$rootfs/etc/ssl" "$rootfs/etc/ssl/certs" "$rootfs/home" "$rootfs/home/nonroot"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$rootfs/tmp"
tar_layer() { # tar_layer OWNER PATH...: appends PATHs of the rootfs to the layer, owned by OWNER
  local owner=$1; shift
  tar --append --file "$work/base.tar" --directory "$rootfs" --sort=name --mtime="@$epoch" \
    --owner="$owner" --group="$owner" --numeric-owner "$@"
}
tar_layer 0 etc tmp
tar_layer "$nonroot" home

# The loopback registry, on a port the kernel picks.
bin/crane registry serve --address 127.0.0.1:0 2>"$work/registry.log" &
registry_pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log")
  [ -n "$port" ] && break
  kill -0 "$registry_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { echo "images.sh: the loopback registry did not start:" >&2; cat "$work/registry.log" >&2; exit 1; }
base="127.0.0.1:$port/karmadaflow/base:$VERSION"

bin/crane append --oci-empty-base --new_layer "$work/base.tar" --new_tag "$base" >/dev/null
bin/crane mutate "$base" --set-platform "$PLATFORM" --user "$nonroot:$nonroot" --workdir /home/nonroot \
  --tag "$base" >/dev/null

source_url="https://$(go list -m)"
mkdir -p "$out"
for component in worker starter; do
  rm -f "$out/$component.tar"
  KO_DOCKER_REPO="$IMAGE_REPO" KO_DEFAULTBASEIMAGE="$base" SOURCE_DATE_EPOCH="$epoch" CGO_ENABLED=0 \
    bin/ko build "./$component" --push=false --base-import-paths --tags "$VERSION" --platform "$PLATFORM" \
      --tarball "$out/$component.tar" --sbom=none --image-user "$nonroot:$nonroot" \
      --ldflags "$LDFLAGS" \
      --image-label "org.opencontainers.image.title=karmadaflow-$component" \
      --image-label "org.opencontainers.image.version=$VERSION" \
      --image-label "org.opencontainers.image.revision=$COMMIT" \
      --image-label "org.opencontainers.image.source=$source_url" >/dev/null
  echo "$IMAGE_REPO/$component:$VERSION in .images/$component.tar ($(du -h "$out/$component.tar" | cut -f1))"
done
