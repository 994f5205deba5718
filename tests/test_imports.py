"""Dependency rules (spec README "Dependency rules").

Which package may import which is the layer contracts' job (``[tool.importlinter]`` in
pyproject.toml, run by tests/test_lint.py). Here: the third-party packages the lowest layers
may use, read from the source with grimp (lazy and ``TYPE_CHECKING`` imports included), and
what the light entry points load at start-up, checked in clean interpreters (speed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = [
    "pydantic",
    "structlog",
    "uvloop",
    "pyte",
    "psutil",
    "jeepney",
    "desktop_notifier",
    "tomlkit",
    "prompt_toolkit",
]


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO)!r})\n{code}\n"
            "import json; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


# Beyond the standard library, the only packages each low layer may import (named, with why).
OUTSIDE_STDLIB = {
    "core": {"regex"},  # screen rules' searches under a time limit (core/screen_rules.py)
    "proto": {"pydantic"},  # the method parameter models (proto/params.py)
    "term": {"pyte"},  # the screen engine (term/screen/)
}


def third_party_imports(graph: grimp.ImportGraph, package: str) -> dict[str, set[str]]:
    """Top-level packages outside the standard library that ``package`` imports, with the
    ``signaltty`` modules importing each."""
    found: dict[str, set[str]] = {}
    for module in {package} | graph.find_descendants(package):
        for imported in graph.find_modules_directly_imported_by(module):
            if not imported.startswith("signaltty") and imported not in sys.stdlib_module_names:
                found.setdefault(imported, set()).add(module)
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("signaltty", include_external_packages=True, cache_dir=None)


@pytest.mark.parametrize("layer", sorted(OUTSIDE_STDLIB))
def test_low_layers_use_only_named_packages(graph: grimp.ImportGraph, layer: str) -> None:
    found = third_party_imports(graph, f"signaltty.{layer}")
    extra = {pkg: sorted(mods) for pkg, mods in found.items() if pkg not in OUTSIDE_STDLIB[layer]}
    assert not extra, f"signaltty.{layer} imports packages outside its allow-list: {extra}"


def test_the_package_check_can_fail(graph: grimp.ImportGraph) -> None:
    # the graph holds function-level imports (cli/main.py imports the daemon inside `daemon`)
    assert graph.direct_import_exists(
        importer="signaltty.cli.main", imported="signaltty.server.daemon"
    )
    # and the check reports a package a core module would import that way
    own = grimp.build_graph("signaltty", include_external_packages=True, cache_dir=None)
    own.add_import(importer="signaltty.core.rules", imported="psutil")
    assert third_party_imports(own, "signaltty.core")["psutil"] == {"signaltty.core.rules"}


def test_core_loads_nothing_heavy():
    mods = modules_after(
        "import "
        + ", ".join(
            f"signaltty.core.{m.stem}"
            for m in sorted((REPO / "signaltty" / "core").glob("*.py"))
            if m.stem != "__init__"
        )
    )
    assert not (set(HEAVY) & mods), set(HEAVY) & mods


@pytest.mark.parametrize(
    "module",
    ["signaltty.cli.entry", "signaltty.proto.client", "signaltty.term.osc", "signaltty.cli.main"],
)
def test_light_modules_load_nothing_heavy(module):
    mods = modules_after(f"import {module}")
    assert not (set(HEAVY) & mods), set(HEAVY) & mods
    assert not any(m.startswith(("signaltty.server", "signaltty.desktop")) for m in mods)


def test_version_output():
    out = subprocess.run(
        [sys.executable, "-m", "signaltty", "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert out.stdout.strip() == "signaltty 0.1.0 (signaltty/1)"
