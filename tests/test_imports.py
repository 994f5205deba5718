"""Dependency rules (spec README "Dependency rules"), checked in clean interpreters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ["pydantic", "structlog", "uvloop", "pyte", "psutil", "jeepney", "desktop_notifier", "tomlkit", "prompt_toolkit"]


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r})\n{code}\nimport json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["signaltty.core.rules", "signaltty.core.waits", "signaltty.core.model", "signaltty.core.sanitize", "signaltty.core.ids", "signaltty.core.layer_rules", "signaltty.core.screen_rules", "signaltty.core.argv_safety", "signaltty.core.keys"])
def test_core_is_stdlib_only(module):
    mods = modules_after(f"import {module}")
    signaltty_mods = {m for m in mods if m.startswith("signaltty.")}
    assert all(m.startswith("signaltty.core") for m in signaltty_mods), signaltty_mods
    assert not (set(HEAVY) & mods)


@pytest.mark.parametrize("module", ["signaltty.cli.entry", "signaltty.proto.client", "signaltty.term.osc", "signaltty.cli.main"])
def test_light_modules_load_nothing_heavy(module):
    mods = modules_after(f"import {module}")
    assert not (set(HEAVY) & mods), set(HEAVY) & mods
    assert not any(m.startswith(("signaltty.server", "signaltty.desktop")) for m in mods)


def test_term_does_not_import_server():
    mods = modules_after("import signaltty.term.screen, signaltty.term.pty, signaltty.term.osc")
    assert not any(m.startswith(("signaltty.server", "signaltty.cli", "signaltty.desktop")) for m in mods)


def test_version_output():
    out = subprocess.run([sys.executable, "-m", "signaltty", "--version"], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "signaltty 0.1.0 (signaltty/1)"
