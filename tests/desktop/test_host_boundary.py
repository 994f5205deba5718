"""The desktop package reaches the daemon only through ``desktop/host.py`` (issue 14 item 2).

Every import statement is read from the source, so imports inside functions and under
``if TYPE_CHECKING:`` count too (an interpreter-level check would not see them).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from signaltty.core import verdicts

DESKTOP = Path(__file__).resolve().parents[2] / "signaltty" / "desktop"


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = "signaltty.desktop"
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against signaltty.desktop
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # ``from signaltty import server`` names the package in the alias
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_desktop_never_imports_server() -> None:
    files = sorted(DESKTOP.glob("*.py"))
    assert {f.name for f in files} >= {"dbus.py", "notify.py", "host.py"}
    bad = [
        f"{f.name}:{line} imports {mod}"
        for f in files
        for line, mod in _imported(f)
        if mod == "signaltty.server" or mod.startswith("signaltty.server.")
    ]
    assert not bad, bad


def test_the_checker_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    # the shapes a server import could hide in; each must be reported
    src = tmp_path / "probe.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from signaltty.server.daemon import Daemon\n"
        "def f():\n"
        "    import signaltty.server.hooks\n"
        "    from signaltty import server\n"
        "    from ..server import router\n",
        encoding="utf-8",
    )
    mods = {m for _, m in _imported(src)}
    assert {
        "signaltty.server.daemon",
        "signaltty.server.hooks",
        "signaltty.server",
        "signaltty.server.router",
    } <= mods


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["Yes", "No"], True),
        (["once", "deny"], True),
        (["ACCEPT", "decline"], True),
        (["once"], False),  # no way to deny from a button
        (["reject"], False),
        (["always", "never"], False),
        ([], False),
    ],
)
def test_buttons_need_an_option_for_each_verdict(ids: list[str], expected: bool) -> None:
    assert verdicts.maps_allow_and_deny(ids) is expected
