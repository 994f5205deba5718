"""Path resolution and directory safety (Spec: desktop-and-service.md §1)."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from signaltty.system import paths
from signaltty.system.paths import PathError

_ENV = (
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "SIGNALTTY_SOCKET",
    "SIGNALTTY_AGENTS_DIR",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment: every §1 variable unset and HOME pointing into tmp."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --------------------------------------------------------------------------- resolution rows

# (resolver, flag, env, expected); "~" in expected stands for $HOME, "=" for the tmp root.
RESOLUTION_ROWS = [
    # runtime dir
    ("runtime_dir", None, {}, f"/tmp/signaltty-{os.getuid()}"),
    ("runtime_dir", None, {"XDG_RUNTIME_DIR": "=/run"}, "=/run/signaltty"),
    ("runtime_dir", None, {"XDG_RUNTIME_DIR": ""}, f"/tmp/signaltty-{os.getuid()}"),
    ("runtime_dir", None, {"XDG_RUNTIME_DIR": "relative/run"}, f"/tmp/signaltty-{os.getuid()}"),
    # socket
    ("socket_path", None, {}, f"/tmp/signaltty-{os.getuid()}/signaltty.sock"),
    ("socket_path", None, {"XDG_RUNTIME_DIR": "=/run"}, "=/run/signaltty/signaltty.sock"),
    (
        "socket_path",
        None,
        {"SIGNALTTY_SOCKET": "=/env.sock", "XDG_RUNTIME_DIR": "=/run"},
        "=/env.sock",
    ),
    ("socket_path", "=/flag.sock", {"SIGNALTTY_SOCKET": "=/env.sock"}, "=/flag.sock"),
    ("socket_path", "", {"SIGNALTTY_SOCKET": "=/env.sock"}, "=/env.sock"),
    (
        "socket_path",
        None,
        {"SIGNALTTY_SOCKET": "", "XDG_RUNTIME_DIR": "=/run"},
        "=/run/signaltty/signaltty.sock",
    ),
    ("socket_path", "~/s.sock", {}, "~/s.sock"),
    # state dir
    ("state_dir", None, {}, "~/.local/state/signaltty"),
    ("state_dir", None, {"XDG_STATE_HOME": "=/state"}, "=/state/signaltty"),
    ("state_dir", None, {"XDG_STATE_HOME": ""}, "~/.local/state/signaltty"),
    ("state_dir", "=/flag-state", {"XDG_STATE_HOME": "=/state"}, "=/flag-state"),
    ("state_dir", "", {"XDG_STATE_HOME": "=/state"}, "=/state/signaltty"),
    # config file
    ("config_file", None, {}, "~/.config/signaltty/config.toml"),
    ("config_file", None, {"XDG_CONFIG_HOME": "=/cfg"}, "=/cfg/signaltty/config.toml"),
    ("config_file", None, {"XDG_CONFIG_HOME": ""}, "~/.config/signaltty/config.toml"),
    ("config_file", "=/my.toml", {"XDG_CONFIG_HOME": "=/cfg"}, "=/my.toml"),
    # config dir
    ("config_dir", None, {}, "~/.config/signaltty"),
    ("config_dir", None, {"XDG_CONFIG_HOME": "=/cfg"}, "=/cfg/signaltty"),
    ("config_dir", None, {"XDG_CONFIG_HOME": ""}, "~/.config/signaltty"),
    # data dir
    ("data_dir", None, {}, "~/.local/share/signaltty"),
    ("data_dir", None, {"XDG_DATA_HOME": "=/data"}, "=/data/signaltty"),
    ("data_dir", None, {"XDG_DATA_HOME": ""}, "~/.local/share/signaltty"),
]


def _expand(value: str, home: Path, root: Path) -> str:
    if value.startswith("~"):
        return str(home) + value[1:]
    if value.startswith("="):
        return str(root) + value[1:]
    return value


@pytest.mark.parametrize(("resolver", "flag", "env", "expected"), RESOLUTION_ROWS)
def test_resolution_row(
    resolver: str,
    flag: str | None,
    env: dict[str, str],
    expected: str,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, _expand(value, home, tmp_path))
    function = getattr(paths, resolver)
    if flag is None:
        args: tuple[str, ...] = ()
    elif flag.startswith("~"):
        args = (flag,)  # passed literally: the resolver expands it
    else:
        args = (_expand(flag, home, tmp_path),)
    assert function(*args) == Path(_expand(expected, home, tmp_path))


@pytest.mark.parametrize(
    ("flag", "env", "config_value", "expected"),
    [
        (None, None, None, "~/.config/signaltty/agents"),
        (None, None, "", "~/.config/signaltty/agents"),
        (None, None, "=/cfg-agents", "=/cfg-agents"),
        (None, "=/env-agents", "=/cfg-agents", "=/env-agents"),
        (None, "", "=/cfg-agents", "=/cfg-agents"),
        ("=/flag-agents", "=/env-agents", "=/cfg-agents", "=/flag-agents"),
        ("", "=/env-agents", None, "=/env-agents"),
    ],
)
def test_agents_dir_precedence(
    flag: str | None,
    env: str | None,
    config_value: str | None,
    expected: str,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if env is not None:
        monkeypatch.setenv("SIGNALTTY_AGENTS_DIR", _expand(env, home, tmp_path))
    resolved = paths.agents_dir(
        None if flag is None else _expand(flag, home, tmp_path),
        None if config_value is None else _expand(config_value, home, tmp_path),
    )
    assert resolved == Path(_expand(expected, home, tmp_path))


def test_agents_dir_follows_xdg_config_home(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert paths.agents_dir() == tmp_path / "cfg" / "signaltty" / "agents"


def test_log_file_is_in_state_dir(tmp_path: Path) -> None:
    assert paths.log_file(tmp_path) == tmp_path / "signaltty.log"


def test_empty_home_falls_back_to_passwd(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "")
    import pwd

    passwd_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert paths.state_dir() == passwd_home / ".local" / "state" / "signaltty"


def test_relative_flag_becomes_absolute(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.socket_path("rel/x.sock") == tmp_path / "rel" / "x.sock"
    assert paths.state_dir("st") == tmp_path / "st"


def test_is_default_socket(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert paths.is_default_socket(None)
    assert paths.is_default_socket("")
    assert not paths.is_default_socket("/x/y.sock")
    monkeypatch.setenv("SIGNALTTY_SOCKET", "")
    assert paths.is_default_socket(None)
    monkeypatch.setenv("SIGNALTTY_SOCKET", "/x/y.sock")
    assert not paths.is_default_socket(None)


# --------------------------------------------------------------------------- socket length


def test_max_socket_path_bytes_per_platform() -> None:
    assert paths.max_socket_path_bytes("linux") == 107
    assert paths.max_socket_path_bytes("darwin") == 103
    expected = 103 if sys.platform == "darwin" else 107
    assert paths.max_socket_path_bytes() == expected


def _path_of_bytes(directory: Path, total: int) -> Path:
    """A path inside ``directory`` whose encoding is exactly ``total`` bytes."""
    prefix = len(os.fsencode(directory)) + 1
    assert total - prefix > 0
    return directory / ("s" * (total - prefix))


def test_socket_path_limit_boundary(tmp_path: Path) -> None:
    limit = paths.max_socket_path_bytes()
    paths.check_socket_path(_path_of_bytes(tmp_path, limit))
    too_long = _path_of_bytes(tmp_path, limit + 1)
    with pytest.raises(PathError, match=rf"{limit + 1} bytes.*at most {limit}"):
        paths.check_socket_path(too_long)
    with pytest.raises(ValueError, match="shorter --socket"):
        paths.check_socket_path(str(too_long))


def test_socket_path_limit_counts_bytes_not_characters() -> None:
    limit = paths.max_socket_path_bytes()
    fits = "/" + "é" * ((limit - 1) // 2)  # 2 bytes per character
    assert len(os.fsencode(fits)) <= limit
    paths.check_socket_path(fits)
    with pytest.raises(PathError):
        paths.check_socket_path(fits + "éé")


def test_socket_path_limit_darwin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    paths.check_socket_path("/" + "a" * 102)
    with pytest.raises(PathError, match="104 bytes"):
        paths.check_socket_path("/" + "a" * 103)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sun_path size")
def test_limit_matches_the_kernel(tmp_path: Path) -> None:
    limit = paths.max_socket_path_bytes()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(os.fspath(_path_of_bytes(tmp_path, limit)))
    with socket.socket(socket.AF_UNIX) as sock, pytest.raises(OSError, match="too long"):
        sock.bind(os.fspath(_path_of_bytes(tmp_path, limit + 1)))


# --------------------------------------------------------------------------- runtime dir


def test_runtime_dir_created_0700_despite_umask(tmp_path: Path) -> None:
    target = tmp_path / "run" / "signaltty"
    old = os.umask(0)
    try:
        paths.ensure_runtime_dir(target, default=True)
    finally:
        os.umask(old)
    assert target.is_dir()
    assert _mode(target) == 0o700
    assert _mode(tmp_path / "run") == 0o700


def test_existing_private_default_runtime_dir_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.mkdir(mode=0o700)
    assert paths.ensure_runtime_dir(target, default=True) == []
    assert _mode(target) == 0o700


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o711, 0o705])
def test_readable_default_runtime_dir_of_ours_is_tightened(tmp_path: Path, mode: int) -> None:
    """Clients only trust a 0700 socket dir (issue 10 §1); nobody else could write in it."""
    target = tmp_path / "signaltty"
    target.mkdir()
    os.chmod(target, mode)
    warnings = paths.ensure_runtime_dir(target, default=True)
    assert _mode(target) == 0o700
    assert warnings == [f"runtime dir {target} had mode {mode:04o}; tightened to 0700"]


@pytest.mark.parametrize("mode", [0o770, 0o720, 0o707, 0o702, 0o777, 0o1777])
def test_writable_default_runtime_dir_refused(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "signaltty"
    target.mkdir()
    os.chmod(target, mode)
    with pytest.raises(PathError, match="group- or world-writable"):
        paths.ensure_runtime_dir(target, default=True)
    assert _mode(target) == mode


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_default_runtime_dir_owned_by_other_refused(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.mkdir(mode=0o700)
    os.chown(target, 65534, -1)
    with pytest.raises(PathError, match="owned by uid 65534"):
        paths.ensure_runtime_dir(target, default=True)


def test_default_runtime_dir_owned_by_other_refused_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "signaltty"
    target.mkdir(mode=0o700)
    owner = os.lstat(target).st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(PathError, match=f"owned by uid {owner}, not by you"):
        paths.ensure_runtime_dir(target, default=True)


def test_default_runtime_dir_symlink_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "signaltty"
    link.symlink_to(real)
    with pytest.raises(PathError, match="symlink"):
        paths.ensure_runtime_dir(link, default=True)


def test_runtime_dir_that_is_a_file_refused(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.write_text("")
    for default in (True, False):
        with pytest.raises(PathError, match="not a directory"):
            paths.ensure_runtime_dir(target, default=default)


def test_uncreatable_runtime_dir_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(PathError, match="cannot create runtime dir"):
        paths.ensure_runtime_dir(blocker / "signaltty", default=True)


@pytest.mark.parametrize("mode", [0o1777, 0o755, 0o750, 0o701])
def test_shared_custom_socket_parent_is_refused_never_chmodded(tmp_path: Path, mode: int) -> None:
    """Clients refuse a socket whose directory others can enter (issue 10 §1): so does the
    daemon, at start, with one clear line; the directory (maybe /tmp) is left as it is."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, mode)  # 1777: like /tmp
    with pytest.raises(PathError, match=rf"refusing socket dir: .*has mode {mode:04o}; it must be 0700"):
        paths.ensure_runtime_dir(shared, default=False)
    assert _mode(shared) == mode


def test_private_custom_socket_parent_is_accepted(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    assert paths.ensure_runtime_dir(own, default=False) == []
    assert _mode(own) == 0o700


def test_missing_custom_socket_parent_created_0700(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    paths.ensure_runtime_dir(target, default=False)
    assert _mode(target) == 0o700
    assert _mode(tmp_path / "a") == 0o700


# --------------------------------------------------------------------------- state dir


def test_state_dir_created_0700(tmp_path: Path) -> None:
    target = tmp_path / "state" / "signaltty"
    old = os.umask(0o022)
    try:
        assert paths.ensure_state_dir(target) == []
    finally:
        os.umask(old)
    assert _mode(target) == 0o700


def test_state_dir_already_0700_no_warning(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.mkdir(mode=0o700)
    assert paths.ensure_state_dir(target) == []
    assert _mode(target) == 0o700


def test_existing_state_dir_tightened_with_warning(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.mkdir()
    os.chmod(target, 0o755)
    warnings = paths.ensure_state_dir(target)
    assert _mode(target) == 0o700
    assert len(warnings) == 1
    assert "0755" in warnings[0]
    assert "0700" in warnings[0]
    assert str(target) in warnings[0]
    assert paths.ensure_state_dir(target) == []


def test_state_dir_that_is_a_file_refused(tmp_path: Path) -> None:
    target = tmp_path / "signaltty"
    target.write_text("")
    with pytest.raises(PathError, match="not a directory"):
        paths.ensure_state_dir(target)
