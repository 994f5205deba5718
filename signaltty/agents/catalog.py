"""The agent catalog: bundled + user manifests merged by id (agents.md §3.1, §4.2, §5.4).

``load_catalog`` reads every bundled manifest (``signaltty/agents/manifests/*.toml``) and every
user manifest (``*.toml`` in the agents directory), each in file-name order, and merges them
into immutable ``CatalogEntry`` values. A bad file never stops loading: it becomes one
``{file, error}`` failure (logged once) and the rest still loads. The daemon holds the result
as ``daemon.catalog`` and swaps it whole on ``agents.reload``/SIGHUP.

Merging (§4.2): a user file whose id equals a bundled id overrides that entry key by key in
``[agent]``, ``[launch]`` and ``[session]``, per event in ``[lifecycle.*]`` and
``[[hooks.rule]]``, per setting in ``[hooks]``, and replaces
``[title_status]``/``[[screen]]`` when present; ``kind`` may not change.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

from signaltty.agents.hookrules.hook_map import EMPTY, HookMap
from signaltty.agents.manifest_hooks import LifecycleOverlay
from signaltty.agents.manifest_loader import ManifestError, load_manifest
from signaltty.agents.manifest_schema import Manifest, PromptTable
from signaltty.core import argv_safety
from signaltty.core.screen_rules import ScreenRule
from signaltty.system import paths

log = structlog.get_logger("signaltty.catalog")

BUNDLED_DIR: Final = Path(__file__).resolve().parent / "manifests"
# Called with the entries of the bundled kinds (``claude.toml`` for ``claude`` …) each time
# the bundled directory is loaded: the builtin adapters adopt them (``adapters/__init__.py``)
# rather than parse the files again on the event loop. A list, so this module does not import
# the adapters, which build on it.
BUNDLED_KIND_LISTENERS: Final[list[Callable[[list[CatalogEntry]], None]]] = []
# Far more than anyone writes by hand; keeps a mistaken directory (say, $HOME) cheap.
MAX_USER_FILES: Final = 512
# ``detect`` runs for every live pane on each process refresh; program names repeat, so
# answers are memoized (the catalog never changes after load). The bound keeps a stream of
# distinct names from growing the memo without limit.
DETECT_MEMO_SIZE: Final = 4096
_MISS: Final = object()


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """How a first prompt reaches the program (agents.md §4.1 ``[launch] prompt``, §4.4).

    ``mode`` is ``argv`` (optional ``separator`` before the prompt), ``flag`` (``flag`` then
    the prompt) or ``after-start`` (bracketed paste after ``delay_ms`` milliseconds).
    """

    mode: str = "argv"
    separator: str | None = None
    flag: str | None = None
    delay_ms: int = 3000


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """``[launch]`` with defaults applied (agents.md §4.1).

    ``command`` is ``""`` when the entry names no program at all (no ``command``, ``detect``
    or exact ``binaries``): such an entry can be detected and overlaid but not launched.
    """

    command: str = ""
    detect: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    prompt: PromptSpec = PromptSpec()
    bypass_args: tuple[str, ...] = ()
    bypass_env: dict[str, str] = field(default_factory=dict)
    continue_args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One merged catalog entry (agents.md §4.1–§4.2).

    ``source`` is ``user`` when a user file defines or overrides the entry (``file`` is then
    that user file's path), else ``bundled``. ``rules`` are title rules then ``[[screen]]``
    rules, each rule carrying its own ``source``/``file`` (an override may keep bundled rules).
    ``resume`` is an argv template with ``{id}``/``{session_id}``, or ``None``.
    ``session_keys`` is ``[session] keys`` (``None``: the base adapter's), ``hooks`` the
    ``[hooks]`` map (bundled and user maps merged per event and per setting).
    """

    id: str
    kind: str
    display_name: str
    binaries: tuple[str, ...] = ()
    order: int | None = None
    homepage: str | None = None
    install_url: str | None = None
    launch: LaunchSpec = LaunchSpec()
    session_key: str | None = None
    session_keys: tuple[str, ...] | None = None
    resume: tuple[str, ...] | None = None
    # ``[session] id_format`` compiled (core/argv_safety.py); None = the adapter's grammar.
    session_id_grammar: re.Pattern[str] | None = None
    lifecycle: dict[str, LifecycleOverlay] = field(default_factory=dict)
    hooks: HookMap = EMPTY
    rules: tuple[ScreenRule, ...] = ()
    source: str = "bundled"
    file: str = ""

    def matches(self, program: str) -> bool:
        """True when ``program`` (a basename) matches ``binaries`` exactly or by prefix (§3.1)."""
        return any(binary_matches(b, program) for b in self.binaries)


def binary_matches(pattern: str, program: str) -> bool:
    """``pattern`` equals ``program``, or ends in ``*`` and ``program`` starts with the rest."""
    if pattern.endswith("*"):
        return program.startswith(pattern[:-1])
    return program == pattern


# --------------------------------------------------------------------------- building


def _build_entry(
    raw: dict[str, dict[str, Any]],
    entry_id: str,
    lifecycle: dict[str, LifecycleOverlay],
    hooks: HookMap | None,
    rules: tuple[ScreenRule, ...],
    source: str,
    file: str,
) -> CatalogEntry:
    """Apply the §4.1 defaults to (possibly merged) explicit keys."""
    a = raw.get("agent", {})
    launch = raw.get("launch", {})
    session = raw.get("session", {})
    binaries = tuple(a.get("binaries") or ())
    detect = launch.get("detect")
    if detect is None:
        detect = [b for b in binaries if not b.endswith("*")]
    command = launch.get("command")
    if not detect and command:
        detect = [command]
    prompt: PromptTable = launch.get("prompt") or PromptTable()
    resume = session.get("resume")
    keys = session.get("keys")
    return CatalogEntry(
        id=entry_id,
        kind=a["kind"],
        display_name=a.get("display_name") or entry_id,
        binaries=binaries,
        order=a.get("order"),
        homepage=a.get("homepage"),
        install_url=a.get("install_url"),
        launch=LaunchSpec(
            command=command or (detect[0] if detect else ""),
            detect=tuple(detect),
            requires=tuple(launch.get("requires") or ()),
            args=tuple(launch.get("args") or ()),
            prompt=PromptSpec(prompt.mode, prompt.separator, prompt.flag, prompt.delay_ms),
            bypass_args=tuple(launch.get("bypass_args") or ()),
            bypass_env=dict(launch.get("bypass_env") or {}),
            continue_args=tuple(launch.get("continue_args") or ()),
        ),
        session_key=session.get("key"),
        session_keys=tuple(keys) if keys is not None else None,
        resume=tuple(resume) if resume is not None else None,
        session_id_grammar=(
            argv_safety.grammar(session["id_format"]) if session.get("id_format") else None
        ),
        lifecycle=dict(lifecycle),
        hooks=hooks if hooks is not None else EMPTY,
        rules=rules,
        source=source,
        file=file,
    )


def _rules(
    title: tuple[ScreenRule, ...] | None, screen: tuple[ScreenRule, ...] | None
) -> tuple[ScreenRule, ...]:
    return (title or ()) + (screen or ())


def entry_from_manifest(m: Manifest) -> CatalogEntry:
    """A catalog entry from one manifest alone (no bundled entry to merge with)."""
    return _build_entry(
        m.raw, m.id, m.lifecycle, m.hooks, _rules(m.title_rules, m.screen_rules), m.source, m.file
    )


def merge_manifests(bundled: Manifest, user: Manifest) -> CatalogEntry:
    """The entry for a user file overriding a bundled one (agents.md §4.2).

    Raises:
        ValueError: the user file changes ``kind`` (message names ``[agent] kind``).
    """
    if user.kind != bundled.kind:
        raise ValueError(
            f"[agent] kind: cannot change the kind of bundled entry {bundled.id!r} "
            f"from {bundled.kind!r} to {user.kind!r}"
        )
    raw = {
        t: {**bundled.raw.get(t, {}), **user.raw.get(t, {})} for t in ("agent", "launch", "session")
    }
    lifecycle = {**bundled.lifecycle, **user.lifecycle}
    hooks = bundled.hooks
    if user.hooks is not None:
        hooks = user.hooks.over(bundled.hooks) if bundled.hooks is not None else user.hooks
    title = user.title_rules if user.title_rules is not None else bundled.title_rules
    screen = user.screen_rules if user.screen_rules is not None else bundled.screen_rules
    return _build_entry(raw, user.id, lifecycle, hooks, _rules(title, screen), "user", user.file)


# --------------------------------------------------------------------------- catalog


class Catalog:
    """The active set of catalog entries (immutable once built; the daemon swaps it whole).

    Attributes:
        dir: the user agents directory as a string, or ``None`` when user manifests are off.
        failures: ``[{file, error}]`` for every file skipped, in load order.
    """

    def __init__(
        self,
        *,
        bundled: list[CatalogEntry],
        user: list[CatalogEntry],
        hook_user: list[CatalogEntry],
        failures: list[dict[str, str]],
        dir: str | None,
    ) -> None:
        # ``bundled``: one entry per bundled id in bundled file order (overridden ids hold the
        # merged entry); ``user``: entries of user files in user file order (overrides too).
        self.dir = dir
        self.failures = failures
        self._bundled = bundled
        self._user = user
        self._hook_user = hook_user
        self._by_id: dict[str, CatalogEntry] = {e.id: e for e in bundled}
        self._by_id.update({e.id: e for e in user})
        self._bundled_only = [e for e in bundled if e.source == "bundled"]
        self._build_detect_index()

    def _build_detect_index(self) -> None:
        # §3.1 order as one ranked sequence: user specific kinds, user generic, bundled
        # specific, bundled generic (file order within each); the first matching entry wins.
        # Exact names go to a dict keeping the best rank; ``*`` prefixes to a short list in
        # rank order, consulted only for ranks ahead of the exact hit.
        ranked = [
            e
            for group in (self._user, self._bundled_only)
            for generic in (False, True)
            for e in group
            if (e.kind == "generic") == generic
        ]
        self._exact: dict[str, tuple[int, CatalogEntry]] = {}
        self._prefixes: list[tuple[int, str, CatalogEntry]] = []
        for rank, e in enumerate(ranked):
            for b in e.binaries:
                if b.endswith("*"):
                    self._prefixes.append((rank, b[:-1], e))
                else:
                    self._exact.setdefault(b, (rank, e))
        self._detect_memo: dict[str, CatalogEntry | None] = {}

    @classmethod
    def empty(cls, dir: str | None = None) -> Catalog:
        """A catalog with no entries (before loading, or in tests)."""
        return cls(bundled=[], user=[], hook_user=[], failures=[], dir=dir)

    def entry(self, entry_id: str) -> CatalogEntry | None:
        """The merged entry with this id, or ``None``."""
        return self._by_id.get(entry_id)

    def entries(self) -> list[CatalogEntry]:
        """Every entry ordered by ``order``, then ``id``; entries without ``order`` come last."""
        return sorted(self._by_id.values(), key=lambda e: (e.order is None, e.order or 0, e.id))

    def detect(self, program_name: str) -> CatalogEntry | None:
        """The entry a program name belongs to (agents.md §3.1 steps 1–2), or ``None``.

        Args:
            program_name: a basename (``gemini``, ``muse-bin-x86``) or a path (its basename
                is used).

        Order: user entries of a specific kind (user file order), then user generic ones,
        then bundled entries by the same rule. ``None`` means "use builtin names, else
        generic" (steps 3–4, ``registry.detect_kind``). Cost: one dict lookup plus a scan
        of the ``*`` prefixes ranked ahead of it, memoized per name (at most
        ``DETECT_MEMO_SIZE`` names).
        """
        name = os.path.basename(program_name)
        if not name:
            return None
        hit = self._detect_memo.get(name, _MISS)
        if hit is not _MISS:
            return hit  # type: ignore[return-value]
        exact = self._exact.get(name)
        best_rank, found = exact if exact is not None else (sys.maxsize, None)
        for rank, prefix, e in self._prefixes:
            if rank >= best_rank:
                break
            if name.startswith(prefix):
                found = e
                break
        if len(self._detect_memo) >= DETECT_MEMO_SIZE:
            self._detect_memo.clear()
        self._detect_memo[name] = found
        return found

    def _applies(self, e: CatalogEntry, kind: str, process_name: str | None) -> bool:
        if kind != "generic":
            return e.kind == kind
        if e.kind != "generic":
            return False
        if not e.binaries:
            return True
        return process_name is not None and e.matches(os.path.basename(process_name))

    def rules_for(self, kind: str, process_name: str | None) -> tuple[str, tuple[ScreenRule, ...]]:
        """The screen rules of a pane (agents.md §5.4).

        Args:
            kind: the pane's kind (``none`` has no rules).
            process_name: the pane's program (``process_name``), scoping generic manifests by
                their ``binaries``; ``None`` matches only generic manifests without binaries.

        Returns:
            ``(source, rules)`` with ``source`` ``user`` (only user rules: some user file has
            rules applying to the pane), ``bundled`` or ``none``; rules in file order, then
            declaration order (user file order for user rules, bundled file order otherwise).
        """
        if kind == "none":
            return "none", ()
        user_rules = tuple(
            r
            for e in self._user
            if self._applies(e, kind, process_name)
            for r in e.rules
            if r.source == "user"
        )
        if user_rules:
            return "user", user_rules
        bundled_rules = tuple(
            r
            for e in self._bundled
            if self._applies(e, kind, process_name)
            for r in e.rules
            if r.source == "bundled"
        )
        return ("bundled", bundled_rules) if bundled_rules else ("none", ())

    def hook_entry_for_kind(self, kind: str) -> CatalogEntry | None:
        """First user entry of ``kind`` whose file has ``[session]``, ``[lifecycle.*]`` or
        ``[hooks]`` content (§4.3)."""
        for e in self._hook_user:
            if e.kind == kind:
                return e
        return None

    def listing(self) -> dict[str, Any]:
        """The ``agents.list`` result (protocol.md §6).

        Returns:
            ``{dir, manifests: [{file, id, kind, source, display_name, binaries,
            screen_rules, hook_overrides}], failures: [{file, error}]}``; ``screen_rules`` is a
            count (title rules included), ``hook_overrides`` the mapped event names, sorted.
        """
        return {
            "dir": self.dir,
            "manifests": [
                {
                    "file": e.file,
                    "id": e.id,
                    "kind": e.kind,
                    "source": e.source,
                    "display_name": e.display_name,
                    "binaries": list(e.binaries),
                    "screen_rules": len(e.rules),
                    "hook_overrides": sorted(e.lifecycle),
                }
                for e in self.entries()
            ],
            "failures": [dict(f) for f in self.failures],
        }


# --------------------------------------------------------------------------- loading


def agents_dir(flag: str | os.PathLike[str] | None = None, config_value: str | None = None) -> Path:
    """The user agents directory: ``--agents-dir``, else ``$SIGNALTTY_AGENTS_DIR``, else config
    ``agents.dir``, else ``$XDG_CONFIG_HOME/signaltty/agents`` (``~/.config/…`` without XDG).

    Thin alias of ``signaltty.system.paths.agents_dir`` (the one place the precedence lives).
    Spec: agents.md §4.2; desktop-and-service.md §1.
    """
    return paths.agents_dir(flag, config_value)


def list_manifest_files(directory: Path, *, missing_ok: bool = True) -> list[Path]:
    """``*.toml`` files of ``directory`` in file-name order (dot files skipped: editor locks).

    Raises:
        OSError: the directory cannot be listed (``NotADirectoryError`` when it is a file,
            ``PermissionError``, ``ELOOP`` …). A missing directory gives ``[]`` when
            ``missing_ok``.
    """
    try:
        with os.scandir(directory) as it:
            names = [e.name for e in it if e.name.endswith(".toml") and not e.name.startswith(".")]
    except FileNotFoundError:
        if missing_ok:
            return []
        raise
    return [directory / n for n in sorted(names)]


def _fail(failures: list[dict[str, str]], file: str, error: str) -> None:
    failures.append({"file": file, "error": error})
    log.warning("agents.manifest_failed", file=file, error=error)


def _load_all(files: list[Path], source: str, failures: list[dict[str, str]]) -> list[Manifest]:
    out: list[Manifest] = []
    first: dict[str, str] = {}
    for path in files:
        try:
            m = load_manifest(path, source)
        except ManifestError as exc:
            _fail(failures, exc.file, exc.error)
            continue
        except Exception as exc:  # a user file must never stop the daemon
            log.exception("agents.manifest_bug", file=str(path))
            _fail(failures, str(path), f"internal error: {exc!r}")
            continue
        if m.id in first:
            _fail(
                failures,
                m.file,
                f"[agent] id: duplicate id {m.id!r} (first in {os.path.basename(first[m.id])})",
            )
            continue
        first[m.id] = m.file
        out.append(m)
    return out


def load_catalog(user_dir: Path | None, *, bundled_dir: Path = BUNDLED_DIR) -> Catalog:
    """Load and merge bundled and user manifests (agents.md §4.2).

    Args:
        user_dir: the user agents directory, or ``None`` for bundled entries only. A missing
            directory means no user manifests.
        bundled_dir: where the bundled manifests live (tests pass a temp dir).

    Returns:
        A new ``Catalog``; files that fail are in ``failures`` (each logged once).

    Raises:
        OSError: ``user_dir`` exists but cannot be listed (the caller keeps its active set).
    """
    failures: list[dict[str, str]] = []
    user_files: list[Path] = []
    if user_dir is not None:
        user_files = list_manifest_files(user_dir)
        if len(user_files) > MAX_USER_FILES:
            for path in user_files[MAX_USER_FILES:]:
                _fail(failures, str(path), f"too many manifests (limit {MAX_USER_FILES})")
            user_files = user_files[:MAX_USER_FILES]
    try:
        # the package's own directory missing is a failure: it was removed or moved under a
        # running daemon (another directory, given by a caller, may be absent)
        bundled_files = list_manifest_files(bundled_dir, missing_ok=bundled_dir != BUNDLED_DIR)
    except OSError as exc:  # a broken installation must not stop the daemon
        _fail(
            failures,
            str(bundled_dir),
            f"cannot list bundled manifests: {exc.strerror or exc} (was signaltty reinstalled "
            "or upgraded under the running daemon? restart it)",
        )
        bundled_files = []
    bundled_ms = _load_all(bundled_files, "bundled", failures)
    if bundled_dir == BUNDLED_DIR and BUNDLED_KIND_LISTENERS:
        kinds = [entry_from_manifest(m) for m in bundled_ms if m.id == m.kind]
        for listener in BUNDLED_KIND_LISTENERS:
            listener(kinds)
    user_ms = _load_all(user_files, "user", failures)

    by_id = {m.id: m for m in bundled_ms}
    merged: dict[str, CatalogEntry] = {}
    user_entries: list[CatalogEntry] = []
    hook_user: list[CatalogEntry] = []
    for m in user_ms:
        base = by_id.get(m.id)
        try:
            entry = merge_manifests(base, m) if base is not None else entry_from_manifest(m)
        except ValueError as exc:
            _fail(failures, m.file, str(exc))
            continue
        if base is not None:
            merged[m.id] = entry
        user_entries.append(entry)
        if m.has_hook_content:
            hook_user.append(entry)
    bundled_entries = [merged.get(m.id) or entry_from_manifest(m) for m in bundled_ms]
    return Catalog(
        bundled=bundled_entries,
        user=user_entries,
        hook_user=hook_user,
        failures=failures,
        dir=str(user_dir) if user_dir is not None else None,
    )


__all__ = [
    "BUNDLED_DIR",
    "Catalog",
    "CatalogEntry",
    "LaunchSpec",
    "LifecycleOverlay",
    "ManifestError",
    "PromptSpec",
    "agents_dir",
    "binary_matches",
    "list_manifest_files",
    "load_catalog",
]
