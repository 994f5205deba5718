#!/usr/bin/env python3
"""A stand-in for Claude Code / Codex that runs the hooks *installed* in its settings file
exactly as the real CLIs do: ``sh -c <command>``, the JSON payload on stdin, stdout read
back and parsed as the hook's verdict, the hook killed at its configured timeout.

    fake_provider.py [--settings FILE] [--agent claude|codex] PLAN_JSON

The settings file defaults to ``$CLAUDE_CONFIG_DIR/settings.json`` (else
``~/.claude/settings.json``) or ``$CODEX_HOME/hooks.json`` (else ``~/.codex/hooks.json``).
Plan steps: ``{"event": E, "payload": {...}, "id": "tag", "background": true,
"provider_timeout": S}`` (run every hook of E; ``provider_timeout`` emulates a shorter
provider deadline), ``{"wait_file": path}``, ``{"sleep": s}``, ``{"touch": path}``. Each hook
run is logged as one JSON line to ``$SIGNALTTY_FAKE_LOG``: ``{id, event, rc, stdout, stderr,
killed, behavior}``. After the plan the provider waits for background hooks, then lingers
``$SIGNALTTY_FAKE_LINGER`` seconds (default 60).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

LOG = os.environ.get("SIGNALTTY_FAKE_LOG", "/dev/null")
_lock = threading.Lock()


def log(entry: dict) -> None:
    with _lock, open(LOG, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def settings_path(agent: str) -> Path:
    if agent == "codex":
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "hooks.json"
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "settings.json"


def hooks_for(settings: Path, event: str) -> list[dict]:
    groups = json.loads(settings.read_text()).get("hooks", {}).get(event, [])
    return [h for g in groups for h in g.get("hooks", []) if h.get("type") == "command"]


def run_hook(step: dict, hook: dict) -> None:
    timeout = step.get("provider_timeout") or hook.get("timeout") or 60
    entry = {"id": step.get("id"), "event": step["event"], "killed": False}
    proc = subprocess.Popen(["sh", "-c", hook["command"]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(json.dumps(step.get("payload", {})), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the provider gives up and shows its own prompt
        out, err = proc.communicate()
        entry["killed"] = True
    entry.update(rc=proc.returncode, stdout=out, stderr=err)
    behavior = None
    if out.strip():
        behavior = json.loads(out)["hookSpecificOutput"]["decision"]["behavior"]
    entry["behavior"] = behavior
    log(entry)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--settings")
    ap.add_argument("--agent", default=Path(sys.argv[0]).name if Path(sys.argv[0]).name in ("claude", "codex") else "claude")
    ap.add_argument("plan")
    args = ap.parse_args()
    settings = Path(args.settings) if args.settings else settings_path(args.agent)
    threads = []
    for step in json.loads(args.plan):
        if "event" in step:
            for hook in hooks_for(settings, step["event"]):
                if step.get("background"):
                    t = threading.Thread(target=run_hook, args=(step, hook))
                    t.start()
                    threads.append(t)
                else:
                    run_hook(step, hook)
        elif "wait_file" in step:
            while not os.path.exists(step["wait_file"]):
                time.sleep(0.02)
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "touch" in step:
            Path(step["touch"]).touch()
    for t in threads:
        t.join()
    log({"done": True})
    time.sleep(float(os.environ.get("SIGNALTTY_FAKE_LINGER", "60")))


if __name__ == "__main__":
    main()
