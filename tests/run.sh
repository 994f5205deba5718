#!/usr/bin/env bash
# Run the whole test suite from a fresh checkout: installs what the tests drive, then pytest.
# Usage: bash tests/run.sh [pytest args…]
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v node >/dev/null 2>&1 || need+=(nodejs)  # runs the OpenCode plugin (tests/installer)
command -v dbus-daemon >/dev/null 2>&1 && command -v dbus-send >/dev/null 2>&1 || need+=(dbus)
command -v gdbus >/dev/null 2>&1 || need+=(libglib2.0-bin)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "tests/run.sh: installing ${need[*]} (Debian packages)"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
exec .venv/bin/python -m pytest -q "$@"
