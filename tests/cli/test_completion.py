"""Shell completions generated from the parser (issue 13 §2), loaded in the real shells:
bash (the registered completion function called as bash-completion calls it), fish
(``complete -C``) and zsh (an interactive shell in a real PTY, TAB pressed)."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

PY = sys.executable
BIN = Path(PY).parent  # the installed console script `signaltty` lives beside the interpreter
PANE_ACTIONS = {"spawn", "attach", "mark-seen", "wait-output", "explain"}


def _shell(name: str) -> str:
    path = shutil.which(name)
    missing = f"{name} not installed" if path is None else None
    if not (BIN / "signaltty").exists():
        missing = "the signaltty console script is not installed beside the interpreter"
    if missing:
        if os.environ.get("CI"):  # tests/run.sh installs both: a miss under CI is a failure
            pytest.fail(missing)
        pytest.skip(missing)
    assert path is not None
    return path


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SIGNALTTY_"))}
    env.update(
        HOME=str(tmp_path),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        PATH=os.pathsep.join([str(BIN), env.get("PATH", os.defpath)]),
        SIGNALTTY_SOCKET=str(tmp_path / "none.sock"),  # completion must not need a daemon
    )
    return env


def _install(env: dict[str, str], shell: str) -> Path:
    r = subprocess.run([PY, "-m", "signaltty", "completion", shell, "--install"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    path = Path(r.stdout.strip().removeprefix("wrote "))
    assert path.is_file(), path
    assert path.is_relative_to(Path(env["HOME"])), path
    return path


def test_bash(home):
    bash = _shell("bash")
    script = _install(home, "bash")
    assert script == Path(home["XDG_DATA_HOME"]) / "bash-completion/completions/signaltty"
    probe = (
        f"source {script}; "
        "COMP_LINE='signaltty pane '; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(signaltty pane ''); "
        "COMP_CWORD=2; fn=$(complete -p signaltty | sed 's/.* -F \\([^ ]*\\) .*/\\1/'); "
        "$fn signaltty '' pane; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    r = subprocess.run([bash, "--norc", "--noprofile", "-c", probe], env=home, capture_output=True,
                       text=True, timeout=60)
    got = {w.strip() for w in r.stdout.split()}
    assert got >= PANE_ACTIONS, (r.stdout, r.stderr)


def test_fish(home):
    fish = _shell("fish")
    script = _install(home, "fish")
    assert script == Path(home["XDG_CONFIG_HOME"]) / "fish/completions/signaltty.fish"
    # fish loads it from its own completions dir: no `source` needed
    r = subprocess.run([fish, "-c", "complete -C 'signaltty permission '"], env=home,
                       capture_output=True, text=True, timeout=60)
    got = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert {"list", "answer"} <= got, (r.stdout, r.stderr)


def test_zsh_tab_in_a_real_pty(home, tmp_path):
    zsh = _shell("zsh")
    script = _install(home, "zsh")
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text(
        f"fpath=({script.parent} $fpath)\nautoload -U compinit && compinit -u\nPS1='READY> '\n"
    )
    env = {**home, "ZDOTDIR": str(zdot), "TERM": "xterm"}
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(zsh, [zsh, "-i"], env)
    buf = bytearray()

    def read_until(token: bytes, timeout: float = 30.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return False
                buf.extend(chunk)
                if token in buf:
                    return True
        return False

    try:
        assert read_until(b"READY> "), bytes(buf)
        os.write(fd, b"signaltty pane \t")
        assert read_until(b"wait-output"), bytes(buf)
        listing = bytes(buf).decode("utf-8", "replace")
        assert all(a in listing for a in PANE_ACTIONS), listing
    finally:
        os.write(fd, b"\x03exit\n")
        deadline = time.monotonic() + 10
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.05)
        os.close(fd)


def _bash_complete(bash: str, env: dict[str, str], script: Path, line: str) -> tuple[set[str], str]:
    """Call the registered completion function for ``line`` (cursor at its end) as
    bash-completion does; returns the candidates and stderr."""
    import shlex

    words = line.split(" ")
    probe = (
        f"source {shlex.quote(str(script))}; "
        f"COMP_LINE={shlex.quote(line)}; COMP_POINT=${{#COMP_LINE}}; "
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
        "fn=$(complete -p signaltty | sed 's/.* -F \\([^ ]*\\) .*/\\1/'); "
        f"$fn signaltty {shlex.quote(words[-1])} {shlex.quote(words[-2])}; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    r = subprocess.run([bash, "--norc", "--noprofile", "-c", probe], env=env, capture_output=True,
                       text=True, timeout=60)
    return {w.strip() for w in r.stdout.split()}, r.stderr


def test_bash_install_explains_bash_completion_and_source_line(home):
    _shell("bash")
    r = subprocess.run([PY, "-m", "signaltty", "completion", "bash", "--install"], env=home,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    target = r.stdout.strip().removeprefix("wrote ")
    assert "bash-completion package" in r.stderr, r.stderr
    assert f"source {target}" in r.stderr, r.stderr


def test_bash_completes_keys_agents_and_nothing_without_a_daemon(home):
    bash = _shell("bash")
    script = _install(home, "bash")
    got, err = _bash_complete(bash, home, script, "signaltty pane input --keys E")
    assert {"Enter", "Escape", "End"} <= got, (got, err)
    assert "Up" not in got, (got, err)
    got, err = _bash_complete(bash, home, script, "signaltty new --agent cl")
    assert {"claude", "cline"} <= got, (got, err)  # bundled names
    assert "codex" not in got, (got, err)
    # no daemon: pane ids complete to nothing, quietly and at once
    start = time.monotonic()
    got, err = _bash_complete(bash, home, script, "signaltty pane attach pane_")
    assert got == set(), (got, err)
    assert err == "", (got, err)
    assert time.monotonic() - start < 20  # generous: a loaded CI machine; never a hang


def test_bash_completes_pane_ids_and_workspaces_from_the_daemon(daemon):
    bash = _shell("bash")
    env = {**daemon.env, "XDG_DATA_HOME": str(daemon.home / "data")}
    script = _install(env, "bash")
    ws = daemon.call("workspace.create", {"name": "compl"})["workspace"]
    ids = [daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["cat"]})["pane"]["id"] for _ in range(2)]
    for line in ("signaltty pane attach ", "signaltty pane input --keys Enter pane_",
                 "signaltty wait --pane pane", "signaltty permission answer "):
        got, err = _bash_complete(bash, env, script, line)
        assert set(ids) <= got, (line, got, err)
    got, err = _bash_complete(bash, env, script, f"signaltty pane get {ids[0][:7]}")
    assert got == {i for i in ids if i.startswith(ids[0][:7])}, (got, err)
    got, err = _bash_complete(bash, env, script, "signaltty workspace get ")
    assert {"compl", ws["id"]} <= got, (got, err)
    for pid in ids:
        daemon.call("pane.close", {"pane_id": pid, "signal": "KILL"})
