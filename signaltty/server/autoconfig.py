"""Automatic hook configuration before ``pane.spawn``/``pane.split``/``pane.resume`` exec.

The provider is the builtin kind of the *actual executable* (never ``agent_hint`` or
manifests); only that provider is configured, in a worker thread, with a 100 ms lock wait
and a 2 s bound for the whole step. A failure never stops the spawn: the result says
``error`` with a notice and the terminal stays usable.

Spec: integrations.md §3 (seed 000 "Automatic configuration").
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

from signaltty.agents.registry import builtin_kind
from signaltty.installer import api, command
from signaltty.installer.homes import PROVIDERS, ROOT_VARS, provider_root
from signaltty.installer.report import Report

log = structlog.get_logger("signaltty.autoconfig")

# integrations.md §3 "bounds": lock wait ≤ 100 ms, whole step ≤ 2 s.
LOCK_TIMEOUT_S: Final = 0.1
STEP_TIMEOUT_S: Final = 2.0
INTEGRATION_HOME_VAR: Final = "SIGNALTTY_INTEGRATION_HOME"
# Providers without a builtin kind (their panes are ``generic`` with a catalog entry), by the
# executable's basename (issue 11: Gemini CLI).
PROVIDER_PROGRAMS: Final = {"gemini": "gemini"}
DISABLED_NOTICE: Final = (
    "{agent}: this launch disables user hooks/plugins; status integration is unavailable."
)
FAILED_NOTICE: Final = "{agent} status setup failed: {error}. The terminal remains available."


@dataclass(frozen=True)
class Setup:
    """The outcome of automatic configuration.

    Attributes:
        integration: ``{agent, status: configured|disabled|error, changed, notice?}``.
        config_env: root variable → absolute root (e.g. ``{"CLAUDE_CONFIG_DIR": "/h/.claude"}``)
            to export to the process and store in ``agent.config_env``; empty when the
            provider finds the root by itself.
    """

    integration: dict[str, Any]
    config_env: dict[str, str] = field(default_factory=dict)


def disables_user_hooks(kind: str, args: Sequence[str]) -> bool:
    """Whether the launch disables user hooks/plugins.

    Claude: ``--bare``, or ``--setting-sources X``/``--setting-sources=X`` whose comma list
    lacks ``user``. OpenCode: ``--pure``. Pi: ``--no-extensions`` (extension discovery off).

    Spec: integrations.md §3 "disabled".
    """
    if kind == "opencode":
        return "--pure" in args
    if kind == "pi":
        return "--no-extensions" in args
    if kind != "claude":
        return False
    for i, arg in enumerate(args):
        if arg == "--bare":
            return True
        value = None
        if arg == "--setting-sources" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--setting-sources="):
            value = arg.split("=", 1)[1]
        if value is not None and "user" not in [s.strip() for s in value.split(",")]:
            return True
    return False


def choose_root(
    kind: str, request_env: Mapping[str, str], cwd: str, environ: Mapping[str, str]
) -> tuple[Path, dict[str, str]]:
    """The provider root and the ``config_env`` that makes the agent use it.

    Order: the request ``env`` root variable (relative → against ``cwd``), else
    ``$SIGNALTTY_INTEGRATION_HOME`` as ``--home``, else the daemon's environment/defaults.
    A root other than the one the agent would find by itself is exported.

    Spec: integrations.md §3 "home".
    """
    var = ROOT_VARS.get(kind)
    if var and request_env.get(var):
        root = Path(os.path.normpath(os.path.join(cwd, request_env[var])))
        return root, {var: str(root)}
    pane_env = {**environ, **request_env}
    default = provider_root(kind, home=None, env=pane_env)
    home = environ.get(INTEGRATION_HOME_VAR) or None
    root = provider_root(kind, home=home, env=environ) if home else default
    if var and root != default:
        return root, {var: str(root)}
    return root, {}


def config_vars(program: str | None, agent_kind: str) -> frozenset[str]:
    """The variables :func:`prepare` may put in a pane's ``config_env``: the root variable of
    the provider of ``program`` (its basename, as :func:`prepare` reads it) or of the pane's
    ``agent_kind``. A restored ``config_env`` holding anything else was not written by
    signaltty (issue 10, third attack pass, A4)."""
    kinds: set[str | None] = {agent_kind}
    if program:
        name = os.path.basename(program)
        kinds |= {builtin_kind(name), PROVIDER_PROGRAMS.get(name)}
    return frozenset(ROOT_VARS[k] for k in kinds if k is not None and k in ROOT_VARS)


def merge_notice(integration: dict[str, Any] | None, agent: str, notice: str) -> dict[str, Any]:
    """Add a runtime notice: status becomes ``disabled`` unless it is already ``error``.

    Spec: integrations.md §3.1.
    """
    if integration is None:
        return {"agent": agent, "status": "disabled", "changed": False, "notice": notice}
    out = dict(integration)
    if out.get("status") != "error":
        out["status"] = "disabled"
    out["notice"] = f"{out['notice']} {notice}" if out.get("notice") else notice
    return out


def _install(kind: str, root: Path, path: str) -> Report:
    reporter = command.daemon_reporter(path)
    return api.install(kind, reporter, root=root, lock_timeout_s=LOCK_TIMEOUT_S)


async def prepare(
    program: str, args: Sequence[str], request_env: Mapping[str, str], cwd: str, path: str
) -> Setup | None:
    """Configure the hooks of ``program``'s provider before it starts.

    Args:
        program: the resolved executable (its basename decides the provider).
        args: the arguments after the program.
        request_env: the request's ``env`` (pane.resume: the stored ``config_env``).
        cwd: the pane's launch directory.
        path: the hydrated PATH (to find the ``signaltty`` reporter).

    Returns:
        None when the program is not ``claude``/``codex``/``opencode``/``cursor``/``pi``/
        ``gemini``; else a :class:`Setup` (``configured``, ``disabled`` or ``error``).

    Raises:
        Nothing: every failure becomes ``status: "error"``.

    Spec: integrations.md §3.
    """
    name = os.path.basename(program)
    kind = builtin_kind(name) or PROVIDER_PROGRAMS.get(name)
    if kind not in PROVIDERS:
        return None
    if disables_user_hooks(kind, args):
        return Setup(
            {
                "agent": kind,
                "status": "disabled",
                "changed": False,
                "notice": DISABLED_NOTICE.format(agent=kind),
            }
        )
    try:
        root, config_env = choose_root(kind, request_env, cwd, os.environ)
        report = await asyncio.wait_for(
            asyncio.to_thread(_install, kind, root, path), STEP_TIMEOUT_S
        )
    except Exception as exc:  # noqa: BLE001 - a setup failure must never stop the spawn
        error = str(exc) or ("timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)
        log.warning("autoconfig.failed", agent=kind, error=error)
        return Setup(
            {
                "agent": kind,
                "status": "error",
                "changed": False,
                "notice": FAILED_NOTICE.format(agent=kind, error=error),
            }
        )
    integration: dict[str, Any] = {"agent": kind, "status": "configured", "changed": report.changed}
    if report.notice:
        integration["notice"] = report.notice
    log.info("autoconfig.complete", agent=kind, file=report.file, changed=report.changed)
    return Setup(integration, config_env)
