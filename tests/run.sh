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
command -v tmux >/dev/null 2>&1 || need+=(tmux)  # a multiplexer inside a pane (tests/server/test_mux_routing.py)
# shell completions are checked in the real shells (tests/cli/test_completion.py)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
# the real `systemd --user` tier (tests/desktop/test_systemd_user.py; runs as root, skipped
# otherwise) also creates a throwaway user and starts its manager with setpriv
if [ "$(id -u)" = 0 ]; then
  command -v useradd >/dev/null 2>&1 || need+=(passwd)
  command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
  # the OpenSSH tier (tests/remote/test_ssh_host.py) starts its own sshd on 127.0.0.1
  [ -x /usr/sbin/sshd ] || need+=(openssh-server)
fi
command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
# the screen model's native loops (signaltty/term/screen/_native.c, built by `pip install -e`;
# tests/term/test_native.py fails without them)
command -v cc >/dev/null 2>&1 || need+=(gcc)
python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' || need+=(python3-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "tests/run.sh: installing ${need[*]} (Debian packages)"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The real agent CLIs (from the npm registry) for the tiers that prove they accept the
# configuration our installers write (tests/installer/test_real_clis.py) and that signaltty's
# states match their screens (tests/real_agents/). Versions as checked in docs/agents.md;
# skipped when npm or the registry is unavailable (tests/real_agents/ then fails under CI).
if [ -z "${SIGNALTTY_REAL_AGENTS_DIR:-}" ] && command -v npm >/dev/null 2>&1; then
  agents_dir="$PWD/.real-agents"
  have_all=1
  for b in claude codex opencode pi gemini; do [ -x "$agents_dir/node_modules/.bin/$b" ] || have_all=0; done
  if [ "$have_all" = 1 ] || \
     timeout 600 npm install --prefix "$agents_dir" --no-audit --no-fund --loglevel=error \
       @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 opencode-ai@1.18.33 \
       @mariozechner/pi-coding-agent@0.73.1 @google/gemini-cli@0.61.0 >/dev/null 2>&1; then
    export SIGNALTTY_REAL_AGENTS_DIR="$agents_dir"
  else
    echo "tests/run.sh: could not install the real agent CLIs; their tier is skipped"
  fi
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
exec .venv/bin/python -m pytest -q "$@"
