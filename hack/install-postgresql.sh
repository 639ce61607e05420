#!/usr/bin/env bash
# install-postgresql.sh: installs Debian's PostgreSQL server binaries (initdb, postgres,
# pg_isready under /usr/lib/postgresql/<major>/bin) when none are there. The local environment
# runs its own instance in its directory, so the package's default cluster is not created.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  exit 0
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-postgresql.sh: PostgreSQL is missing; run as root or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
echo "installing PostgreSQL from the distribution's packages"
"${sudo[@]}" mkdir -p /etc/postgresql-common
if ! grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf; then
  echo 'create_main_cluster = false' | "${sudo[@]}" tee -a /etc/postgresql-common/createcluster.conf >/dev/null
fi
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
