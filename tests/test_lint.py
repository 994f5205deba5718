"""Static checks as tests: ruff, mypy and the layer contracts (issue 14 item 3).

``bash tests/run.sh`` (the README's test command, which ``.ci/run`` calls) runs these, so a lint,
type or layering error fails CI like any failing test. Each tool runs from the venv that runs
pytest, with the configuration in pyproject.toml (``[tool.ruff]``, ``[tool.mypy]``,
``[tool.importlinter]``), and the failure message is the tool's whole output. The layer
contracts are described in docs/architecture.md "Layer contracts".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TIMEOUT_S = 600  # a cold mypy run of the whole package takes ~10 s on 2 cores


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``tool`` (a console script of this venv) in the repository; its output is returned."""
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not installed in {BIN}: pip install -e '.[test]'")
    return subprocess.run(
        [str(exe), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def assert_clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"{' '.join(proc.args)} failed:\n{proc.stdout}\n{proc.stderr}"


# one case per tree, so a failure says whose code it is
@pytest.mark.parametrize("tree", ["signaltty", "bench", "tests"])
def test_ruff(tree: str) -> None:
    assert_clean(run_tool("ruff", "check", "--output-format", "concise", tree))


def test_mypy() -> None:
    # the files and the per-package strictness come from [tool.mypy]
    assert_clean(run_tool("mypy"))


def test_layer_contracts() -> None:
    assert_clean(run_tool("lint-imports"))


def test_the_layer_check_fails_on_an_upward_import(tmp_path: Path) -> None:
    """The contracts can fail: a copy of the package with ``core`` importing ``server`` lazily
    (inside a function, the kind of import the old hand-written check missed) is refused."""
    copy = tmp_path / "signaltty"
    for src in (REPO / "signaltty").rglob("*.py"):
        dst = copy / src.relative_to(REPO / "signaltty")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
    (copy / "core" / "upward.py").write_text(
        "def f() -> None:\n    import signaltty.server.store  # noqa: F401\n"
    )
    (tmp_path / "pyproject.toml").write_bytes((REPO / "pyproject.toml").read_bytes())
    proc = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache", "--contract", "layers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(BIN)},
    )
    assert proc.returncode != 0, proc.stdout
    assert "signaltty.core.upward -> signaltty.server.store" in proc.stdout, proc.stdout
