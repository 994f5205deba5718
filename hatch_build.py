"""Wheel build hook: compiles the screen model's native loops (signaltty/term/screen/_native.c).

The extension is optional. Without a C compiler or the Python headers the wheel is built pure
Python, with a warning, and the daemon runs the same results at the pure-Python speed
(``signaltty/term/screen/native.py``); ``SIGNALTTY_PURE_PYTHON=1`` at build time skips the
compiler on purpose. An editable install (``pip install -e .``, as ``tests/run.sh`` does)
builds the module in place, next to its source.

setuptools only drives the platform's compiler and linker here (flags, include paths, the
module's file name); the project itself is built by hatchling.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "signaltty.term.screen._native"
SOURCE = "signaltty/term/screen/_native.c"


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Builds ``MODULE`` for the wheel, or for an editable install in place."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("SIGNALTTY_PURE_PYTHON"):
            return
        editable = version == "editable"
        with tempfile.TemporaryDirectory() as scratch:
            built = _compile(Path(self.root), Path(scratch), inplace=editable)
            if built is None or editable:
                return
            # The file only lives until the hook returns: the wheel takes a copy kept by us.
            keep = Path(self.directory) / ".native" / built.name
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_bytes(built.read_bytes())
        package = MODULE.rsplit(".", 1)[0].replace(".", "/")
        build_data["force_include"][str(keep)] = f"{package}/{keep.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True


def _compile(root: Path, scratch: Path, *, inplace: bool) -> Path | None:
    """Build the extension; its path, or None (with a warning on stderr) if it cannot be."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        dist = Distribution(
            {"name": "signaltty-native", "ext_modules": [Extension(MODULE, [SOURCE])]}
        )
        command = build_ext(dist)
        command.inplace = inplace
        command.force = True
        command.build_lib = str(scratch / "lib")
        command.build_temp = str(scratch / "temp")
        command.ensure_finalized()
        command.run()
        return Path(command.get_ext_fullpath(MODULE))
    except Exception as exc:  # any compiler, linker or setuptools failure: ship pure Python
        print(
            f"signaltty: the native screen loops were not built ({type(exc).__name__}: {exc});"
            " the pure-Python forms will run (same results, slower)",
            file=sys.stderr,
        )
        return None
    finally:
        os.chdir(cwd)
