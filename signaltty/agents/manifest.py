"""Public names of the manifest schema and loader, for callers that need one import.

The code lives in ``manifest_loader.py`` (reading, TOML parsing, ``ManifestError``),
``manifest_schema.py`` (the tables and ``Manifest``), ``manifest_hooks.py`` (``[hooks]``,
``[lifecycle.<Event>]``), ``manifest_screen.py`` (``[title_status]``, ``[[screen]]``) and
``manifest_fields.py`` (limits and shared checks). Spec: agents.md §4.1, §5.1.
"""

from __future__ import annotations

from signaltty.agents.manifest_fields import (
    MAX_ENV_NAME,
    MAX_ENV_VARS,
    MAX_HOOK_RULES,
    MAX_LIFECYCLE_EVENTS,
    MAX_LIST_ITEMS,
    MAX_PATTERNS_PER_FILE,
    MAX_SCREEN_RULES,
    MAX_STRING,
    RESERVED_ENV,
    RESERVED_ENV_PREFIX,
)
from signaltty.agents.manifest_hooks import LifecycleOverlay
from signaltty.agents.manifest_loader import (
    MAX_MANIFEST_BYTES,
    ManifestError,
    load_manifest,
    parse_toml,
    read_manifest_bytes,
    validate_manifest,
)
from signaltty.agents.manifest_schema import Manifest, PromptTable
from signaltty.agents.manifest_screen import compile_screen_rules, compile_title_rules

__all__ = [
    "MAX_ENV_NAME",
    "MAX_ENV_VARS",
    "MAX_HOOK_RULES",
    "MAX_LIFECYCLE_EVENTS",
    "MAX_LIST_ITEMS",
    "MAX_MANIFEST_BYTES",
    "MAX_PATTERNS_PER_FILE",
    "MAX_SCREEN_RULES",
    "MAX_STRING",
    "RESERVED_ENV",
    "RESERVED_ENV_PREFIX",
    "LifecycleOverlay",
    "Manifest",
    "ManifestError",
    "PromptTable",
    "compile_screen_rules",
    "compile_title_rules",
    "load_manifest",
    "parse_toml",
    "read_manifest_bytes",
    "validate_manifest",
]
