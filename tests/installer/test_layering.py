"""The installer is importable by the CLI without the daemon's stack (docs/architecture.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def test_installer_does_not_import_server_or_daemon_libraries():
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); import signaltty.installer.api, "
            "signaltty.cli.integration_cmd; import json; print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    mods = set(json.loads(out))
    assert not {"pydantic", "uvloop", "pyte", "psutil", "structlog", "jeepney"} & mods
    assert not any(m.startswith(("signaltty.server", "signaltty.desktop", "signaltty.proto")) for m in mods)
