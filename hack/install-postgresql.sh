#!/usr/bin/env bash
# install-postgresql.sh: installs Debian's PostgreSQL server binaries (initdb, postgres,
# pg_isready under /usr/lib/postgresql/<major>/bin) when none are there. The local environment
# runs its own instance in its directory, so the package's default cluster is not created.
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  exit 0
fi
echo "installing PostgreSQL from the distribution's packages"
as_root mkdir -p /etc/postgresql-common
if ! grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf; then
  echo 'create_main_cluster = false' | as_root tee -a /etc/postgresql-common/createcluster.conf >/dev/null
fi
apt_install postgresql
