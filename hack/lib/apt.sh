# apt.sh, sourced by the hack/install-*.sh scripts: runs commands as root (through sudo when
# not root) and installs packages from the distribution's repositories.

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
    return
  fi
  command -v sudo >/dev/null || { echo "$(basename "$0"): installing packages needs root or sudo" >&2; exit 1; }
  sudo "$@"
}

apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
