#!/usr/bin/env bash
# install-chromium.sh: installs Debian's chromium when it is missing. The end-to-end tests
# drive it headless to read the Temporal UI as an operator sees it (test/browser).
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

if command -v chromium >/dev/null; then
  exit 0
fi
echo "installing chromium from the distribution's packages"
apt_install chromium
