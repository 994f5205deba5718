#!/usr/bin/env python3
"""Record one real Claude Code and one real Codex working turn for ``bench/replay.py``.

Each agent CLI (the pinned ones of the real-agent tier, ``.real-agents/node_modules/.bin`` or
``$SIGNALTTY_REAL_AGENTS_DIR``) runs in a 120x40 signaltty pane of a private daemon
(``_harness.BenchDaemon``), configured as ``tests/real_agents/agents.py`` does and pointed at
that tier's fake model server on 127.0.0.1 (no real model is reached). The pane runs the CLI
under util-linux ``script``, which copies every byte the CLI writes, with its timing, into a
file; the pane's own screen answers the CLI's terminal queries, so the CLI draws exactly as it
does in a pane.

The turn: the prompt ``perm-r1`` is typed; the model "thinks" for 3 s (the CLI animates its
working indicator), streams a sentence and asks for a shell command; the permission dialog is
answered "allow once" as a person would (after 0.8 s); the command runs; the model thinks
2 s more and streams a ~2 KB markdown answer (a list and a code block) in word-sized deltas
every 30 ms. The recording keeps everything from the CLI's start to its exit; ``turn`` marks
the chunks from the prompt's first typed byte to 1 s after the answer settled, the part
``bench/replay.py`` loops.

Output (data, committed): ``bench/fixtures/replay/<agent>_turn.json.gz``, a gzip JSON object
``{"format": "signaltty-replay/1", "agent", "cli_version", "cols", "rows", "turn": [first,
end], "chunks": [[delay_ms, base64 bytes], ...]}``; ``delay_ms`` is the time since the
previous chunk. The temp dir's path is replaced by a same-length placeholder, so the file
holds no path of the recording machine.

Usage: ``python bench/record_turn.py [--agents claude,codex] [--out DIR]``. Takes ~1 min per
agent. Exit status 1 when a CLI could not be driven (the screen is printed).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _harness as h
from tests.real_agents import fake_model
from tests.real_agents.agents import AGENTS
from tests.real_agents.harness import CI_VARS, Agent

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "fixtures" / "replay"
COLS, ROWS = 120, 40
CHUNK_PACE_S = 0.03
TOKEN = "r1"

ANSWER = """\
Done: the command ran and created the marker file. Here is what I found in the project.

## Summary

- The build reads its settings from `config.toml` and falls back to defaults when a key is missing.
- Two modules parse the same date format; one of them ignores the time zone.
- The test suite covers the happy path of the importer but not an empty input file.
- Logging goes to standard error at the `info` level; nothing rotates the log file.

## Suggested change

The importer should treat an empty file as zero records instead of failing:

```python
def load_records(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if not text.strip():
        return []
    return [parse_line(line) for line in text.splitlines() if line]
```

## Next steps

1. Add a test with an empty file and one with a trailing blank line.
2. Use one date parser everywhere and keep the time zone.
3. Decide whether the log file should rotate by size or by day.

Tell me which of these you want me to do first, and I will make the change and run the tests.
"""


def _words(text: str) -> list[str]:
    """Word-sized stream deltas (spaces and newlines kept), as a model streams them."""
    return re.findall(r"\S+\s*|\s+", text)


def _plan_for(user_text: str | None, after_tool: bool, side: bool) -> tuple[str, fake_model.Plan]:
    label, plan = _ORIGINAL_PLAN_FOR(user_text, after_tool, side)
    if label == f"perm-{TOKEN}:call":
        plan = fake_model.Plan(_words("I will look at the project first and run a quick command."),
                               delay=3.0, command=plan.command)
    elif label == f"perm-{TOKEN}:result":
        plan = fake_model.Plan(_words(ANSWER), delay=2.0)
    return label, plan


def _paced_stream_text(self: Any, plan: fake_model.Plan, emit: Any, keepalive: Any = None) -> None:
    self._wait(plan, keepalive)
    for chunk in plan.chunks:
        emit(chunk)
        time.sleep(CHUNK_PACE_S)


_ORIGINAL_PLAN_FOR = fake_model.plan_for


class _Setup:
    """What ``Agent.setup`` reads of a real-agent ``Session``: its dirs and the model's URL."""

    def __init__(self, root: str, model: fake_model.FakeModel) -> None:
        self.root = Path(root)
        self.home = self.root / "home"
        self.work = self.root / "work"
        self.work.mkdir(exist_ok=True)
        self.model = model


def _bin_dir() -> Path:
    value = os.environ.get("SIGNALTTY_REAL_AGENTS_DIR")
    prefix = Path(value) if value else REPO / ".real-agents"
    return prefix / "node_modules" / ".bin"


def _cli_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    found = re.search(r"\d+\.\d+\.\d+", out)
    return found.group(0) if found else "unknown"


class Driver:
    """One agent in one pane: screen polling and keys, as the real-agent tier drives it."""

    def __init__(self, d: h.BenchDaemon, agent: Agent, pane_id: str) -> None:
        self.d, self.agent, self.pane_id = d, agent, pane_id

    def screen(self) -> str:
        return str(self.d.call("pane.read", {"pane_id": self.pane_id, "mode": "screen"})["text"])

    def send(self, data: bytes) -> None:
        b64 = base64.b64encode(data).decode()
        self.d.call("pane.input", {"pane_id": self.pane_id, "data_b64": b64})

    def has(self, key: str, text: str) -> bool:
        return re.search(getattr(self.agent, key), text, re.M) is not None

    def settled(self, text: str) -> bool:
        busy = self.has("working", text) or self.has("dialog", text)
        return self.has("idle", text) and not busy

    def wait(self, pred: Any, what: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if pred(text):
                return text
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.agent.name}: never showed {what}\n--- screen:\n{text}")
            time.sleep(0.1)


def _flat(text: str) -> str:
    return " ".join(text.split())


def record(agent: Agent, out_dir: Path) -> Path:
    binary = _bin_dir() / agent.binary
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"real agent CLI missing: {binary} (set SIGNALTTY_REAL_AGENTS_DIR)")
    model = fake_model.FakeModel().start()
    fake_model.plan_for = _plan_for
    fake_model._Handler._stream_text = _paced_stream_text  # type: ignore[method-assign]

    def setup(tmp: str) -> dict[str, str]:
        env = agent.setup(_Setup(tmp, model))  # type: ignore[arg-type]
        # the pane must not look like a CI job (Node CLIs turn non-interactive); BenchDaemon
        # copies the caller's environment, so these are emptied rather than dropped
        env.update({v: "" for v in CI_VARS if v in os.environ})
        return env

    try:
        with h.BenchDaemon(prefix="strec-", setup=setup) as d:
            raw, timing = d.path("out.bin"), d.path("timing.txt")
            work = d.path("work")
            ws = d.call("workspace.create", {"name": agent.name, "cwd": work})["workspace"]["id"]
            cmd = shlex.join([str(binary), *agent.args])
            argv = ["script", "-q", "-f", "-E", "never", "-O", raw, "-T", timing, "-c", cmd]
            pane = d.call("pane.spawn", {"workspace_id": ws, "argv": argv, "cwd": work,
                                         "cols": COLS, "rows": ROWS})["pane"]
            drv = Driver(d, agent, str(pane["id"]))
            h.log(f"{agent.name}: started; waiting for its prompt")
            text = drv.wait(lambda t: drv.settled(t) or "Hooks need review" in t,
                            "its idle prompt", 90)
            if "Hooks need review" in text:
                drv.send(b"2")  # Codex: "Trust all and continue" for the hooks signaltty added
                time.sleep(1.0)
                if "Hooks need review" in drv.screen():
                    drv.send(b"\r")
                drv.wait(drv.settled, "its idle prompt after the hooks review", 60)
            time.sleep(2.0)  # start-up drawing is over
            turn_first = os.path.getsize(raw)
            prompt = f"perm-{TOKEN}"
            drv.send(prompt.encode())
            drv.wait(lambda t: prompt in t, "the typed prompt", 20)
            time.sleep(agent.submit_delay)
            drv.send(b"\r")
            h.log(f"{agent.name}: prompt sent")
            last_line = ANSWER.strip().splitlines()[-1][-40:]
            deadline = time.monotonic() + 120
            answered = False
            while True:
                text = drv.screen()
                if drv.has("dialog", text) and not answered:
                    time.sleep(0.8)  # a person reads the dialog
                    for k in agent.allow_keys:
                        drv.send(k)
                        time.sleep(0.3)
                    answered = True
                    h.log(f"{agent.name}: permission allowed")
                elif drv.settled(text) and last_line in _flat(text):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{agent.name}: the turn never finished\n{model.summary()}\n{text}")
                time.sleep(0.1)
            time.sleep(1.0)
            turn_end = os.path.getsize(raw)
            h.log(f"{agent.name}: turn over ({turn_end - turn_first} bytes); quitting")
            for k in agent.quit_keys:
                drv.send(k)
                time.sleep(0.5)
            with d.client(timeout=None) as c:
                c.call("wait", {"pane_id": drv.pane_id, "until": "exited", "timeout_s": 30})
            d.note_children()
            return _write(agent, str(binary), d.tmp, raw, timing, (turn_first, turn_end), out_dir)
    finally:
        model.stop()
        fake_model.plan_for = _ORIGINAL_PLAN_FOR


def _write(agent: Agent, binary: str, tmp: str, raw: str, timing: str, turn: tuple[int, int],
           out_dir: Path) -> Path:
    data = Path(raw).read_bytes()
    header = data.index(b"\n") + 1  # "Script started on … [COMMAND=…]"
    placeholder = "/tmp/" + "x" * (len(tmp) - len("/tmp/"))
    chunks: list[list[Any]] = []
    offsets: list[int] = []
    pos = header
    for line in Path(timing).read_text().splitlines():
        delay_s, size = line.split()
        piece = data[pos : pos + int(size)]
        offsets.append(pos)
        pos += int(size)
        piece = piece.replace(tmp.encode(), placeholder.encode())
        chunks.append([round(float(delay_s) * 1000, 1), base64.b64encode(piece).decode()])
    first = next(i for i, off in enumerate(offsets) if off >= turn[0])
    end = next((i for i, off in enumerate(offsets) if off >= turn[1]), len(offsets))
    doc = {"format": "signaltty-replay/1", "agent": agent.name, "cli_version": _cli_version(binary),
           "cols": COLS, "rows": ROWS, "turn": [first, end], "chunks": chunks}
    blob = json.dumps(doc, separators=(",", ":")).encode()
    for secret in (tmp, str(REPO), os.path.expanduser("~"), socket.gethostname()):
        if len(secret) > 4 and secret.encode() in blob:
            h.log(f"warning: {secret!r} is in the {agent.name} recording")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{agent.name}_turn.json.gz"
    path.write_bytes(gzip.compress(blob, mtime=0))
    turn_ms = sum(c[0] for c in chunks[first + 1 : end])
    turn_bytes = sum(len(base64.b64decode(c[1])) for c in chunks[first:end])
    h.log(f"{agent.name}: {len(chunks)} chunks, turn {end - first} chunks, {turn_bytes} bytes over "
          f"{turn_ms / 1000:.1f} s → {path.name} ({path.stat().st_size} bytes)")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", default="claude,codex", help="comma-separated (claude,codex)")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    args = ap.parse_args(argv)
    if shutil.which("script") is None:
        print("util-linux 'script' is not installed", file=sys.stderr)
        return 1
    status = 0
    with h.terminate_on_signals():
        for name in args.agents.split(","):
            try:
                record(AGENTS[name], args.out)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
