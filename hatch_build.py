"""Wheel build hook: compiles the native modules: the screen model's loops
(signaltty/term/screen/_native.c) and the PTY reader thread (signaltty/term/_reader.c).

Both are optional. Without a C compiler or the Python headers the wheel is built pure
Python, with a warning, and the daemon runs the same results at the pure-Python speed
(``signaltty/term/screen/native.py``) and reads every PTY on its event loop
(``signaltty/term/reader_thread.py``); ``SIGNALTTY_PURE_PYTHON=1`` at build time skips the
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

# (module, source); the reader thread needs POSIX threads and poll(2)
EXTENSIONS = (
    ("signaltty.term.screen._native", "signaltty/term/screen/_native.c"),
    ("signaltty.term._reader", "signaltty/term/_reader.c"),
)


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Builds ``EXTENSIONS`` for the wheel, or for an editable install in place."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("SIGNALTTY_PURE_PYTHON"):
            return
        editable = version == "editable"
        for module, source in EXTENSIONS:
            with tempfile.TemporaryDirectory() as scratch:
                built = _compile(Path(self.root), Path(scratch), module, source, inplace=editable)
                if built is None or editable:
                    continue
                # The file only lives until the hook returns: the wheel takes a copy kept by us.
                keep = Path(self.directory) / ".native" / built.name
                keep.parent.mkdir(parents=True, exist_ok=True)
                keep.write_bytes(built.read_bytes())
            package = module.rsplit(".", 1)[0].replace(".", "/")
            build_data["force_include"][str(keep)] = f"{package}/{keep.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True


def _compile(root: Path, scratch: Path, module: str, source: str, *, inplace: bool) -> Path | None:
    """Build the extension; its path, or None (with a warning on stderr) if it cannot be."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        dist = Distribution(
            {"name": "signaltty-native", "ext_modules": [Extension(module, [source])]}
        )
        command = build_ext(dist)
        command.inplace = inplace
        command.force = True
        command.build_lib = str(scratch / "lib")
        command.build_temp = str(scratch / "temp")
        command.ensure_finalized()
        command.run()
        return Path(command.get_ext_fullpath(module))
    except Exception as exc:  # any compiler, linker or setuptools failure: ship pure Python
        print(
            f"signaltty: {module} was not built ({type(exc).__name__}: {exc});"
            " the pure-Python forms will run (same results, slower)",
            file=sys.stderr,
        )
        return None
    finally:
        os.chdir(cwd)
