"""The documentation stands alone and says what the code does (issue 13 item 12).

* every key of the ``config.toml`` model is in docs/configuration.md, in its section, with
  the model's default and bounds (and no key that the model lacks);
* the D-Bus tables of docs/desktop.md match the ``Introspect`` output of a real daemon on
  a private bus (methods with named arguments, signals, properties and their
  ``EmitsChangedSignal`` annotation) and the keys of its ``Status`` reply;
* no file is cited that is not in the repository: backticked paths, Markdown links and
  ``*.md`` names in README.md and docs/*.md; nothing points at ``../shared``.
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from pydantic import BaseModel

from signaltty.server import config as C
from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import PrivateBus, have_dbus

REPO = Path(__file__).resolve().parent.parent
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]


def _table_after(text: str, heading: str) -> list[list[str]]:
    """Body rows (cells, stripped) of the first Markdown table after the line ``heading``
    (or of the table whose header row is ``heading``)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    assert start is not None, f"no heading {heading!r}"
    rows: list[list[str]] = [heading.strip("|").split(" | ")] if heading.startswith("|") else []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    assert len(rows) >= 2, f"no table: {heading!r}"
    assert set("".join(rows[1])) <= set("-:| "), f"no table: {heading!r}"
    return rows[2:]


def _code(cell: str) -> str:
    m = re.fullmatch(r"`([^`]*)`", cell)
    assert m, f"expected one `code` span, got {cell!r}"
    return m.group(1)


# ---------------------------------------------------------------- config.toml


def _sections() -> Iterator[tuple[str, type[BaseModel]]]:
    for name, field in C.Config.model_fields.items():
        # [hosts.NAME] tables (issue 16): one row per key of an entry
        model = C.HostEntry if name == "hosts" else field.annotation
        assert isinstance(model, type)
        assert issubclass(model, BaseModel)
        yield name, model


def _bounds(field) -> list[float]:
    out = []
    for meta in field.metadata:
        for attr in ("ge", "le", "gt", "lt"):
            value = getattr(meta, attr, None)
            if value is not None:
                out.append(value)
    return out


def test_every_config_key_is_documented_with_its_default_and_bounds():
    text = (REPO / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^## `\[(\w+)\]`$", text, re.M))
    assert documented == set(C.Config.model_fields), "sections in docs ≠ sections of the model"
    for section, model in _sections():
        rows = {_code(r[0]): r for r in _table_after(text, f"## `[{section}]`")}
        assert set(rows) == set(model.model_fields), (section, sorted(rows))
        for key, field in model.model_fields.items():
            _key, kind, default, meaning = rows[key]
            where = f"[{section}] {key}"
            assert meaning, where
            if field.is_required():
                assert default == "required", where
            elif field.default is None:
                assert default == "unset", where
            else:
                value = tomllib.loads(f"v = {_code(default)}")["v"]
                # (True == 1 in Python: a boolean must be documented as one)
                same_kind = isinstance(value, bool) == isinstance(field.default, bool)
                assert value == field.default, (where, value, field.default)
                assert same_kind, (where, value, field.default)
            for bound in _bounds(field):
                assert f"{bound:g}" in kind, (where, bound, kind)
            if typing.get_origin(field.annotation) is typing.Literal:
                for allowed in typing.get_args(field.annotation):
                    assert f'`"{allowed}"`' in kind, (where, allowed)


def test_the_environment_overrides_of_the_config_are_documented():
    text = (REPO / "docs" / "configuration.md").read_text()
    variables = set(re.findall(r"SIGNALTTY_[A-Z_]+", Path(C.__file__).read_text()))
    assert variables, "config.py reads no environment variable?"
    for var in sorted(variables):
        assert f"`{var}`" in text, var


# ---------------------------------------------------------------- files cited


def _top_level() -> set[str]:
    return {
        p.name
        for p in REPO.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__"
    }


def _package_dirs() -> set[str]:
    package = REPO / "signaltty"
    return {p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"}


def _cited_paths(text: str) -> Iterator[str]:
    """Backticked paths into the repository: from its top (``tests/…``), from the package
    (``server/hooks.py`` = ``signaltty/server/hooks.py``), or ``../`` anything."""
    prefixes = tuple(f"{d}/" for d in _top_level() | _package_dirs()) + ("../",)
    for token in re.findall(r"`([^`\n]+)`", text):
        token = token.strip()
        if " " in token or not token.startswith(prefixes):
            continue
        if re.fullmatch(r"signaltty/\d+", token):
            continue  # the protocol's name
        yield re.split(r"::|#|:(?=\d)", token)[0].rstrip(".,;")


def _exists(rel: str, base: Path) -> bool:
    """Whether ``rel`` (``<placeholder>`` and globs allowed) names something in the repository
    (at its top or in the package)."""
    rel = re.sub(r"<[^>/]+>", "*", rel)
    roots = [base, REPO, REPO / "signaltty"]
    if any(ch in rel for ch in "*?["):
        candidates = [c for root in roots for c in root.glob(rel)]
    else:
        candidates = [root / rel for root in roots]
    return any(c.exists() and c.resolve().is_relative_to(REPO) for c in candidates)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_docs_cite_only_files_in_the_repository(page: Path):
    text = page.read_text()
    assert "../shared" not in text, f"{page.name} points outside the repository"
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # examples, not citations
    missing = [p for p in _cited_paths(text) if not _exists(p, REPO)]
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target) and not (page.parent / target).exists():
            missing.append(target)
    for name in re.findall(r"(?<![\w./-])([\w-]+\.md)\b", text):
        # docs/<name>, the specification (docs/spec/<name>) or a file at the top
        if not any((d / name).exists() for d in (REPO / "docs", REPO / "docs" / "spec", REPO)):
            missing.append(name)
    assert not missing, f"{page.name} cites files that are not in the repository: {missing}"


def test_the_scanner_sees_a_missing_file():
    text = "see `signaltty/desktop/nope.py` and `../shared/spec/` and `tests/desktop/*.py`"
    cited = list(_cited_paths(text))
    assert cited == ["signaltty/desktop/nope.py", "../shared/spec/", "tests/desktop/*.py"]
    assert [p for p in cited if not _exists(p, REPO)] == cited[:2]


# ---------------------------------------------------------------- D-Bus


@pytest.fixture(scope="module")
def introspected() -> tuple[ET.Element, dict]:
    """``(interface element, Status reply)`` of a real daemon on a private bus."""
    if not have_dbus():
        if os.environ.get("CI"):
            pytest.fail("dbus-daemon is missing (install Debian package dbus)")
        pytest.skip("dbus-daemon is missing")
    import tempfile

    bus = PrivateBus()
    with tempfile.TemporaryDirectory(prefix="st-", dir="/tmp") as root:
        d = DaemonProc(Path(root), {**bus.env(), "SIGNALTTY_DBUS": "1", "SIGNALTTY_NOTIFY": "0"})
        try:
            d.start()
            wait_until(lambda: d.call("server.status")["dbus"]["name_owned"])
            obj = DBusAddress("/dev/signaltty/Signaltty", bus_name="dev.signaltty.Signaltty")
            def ask(conn, iface: str, member: str):
                addr = DBusAddress(obj.object_path, obj.bus_name, iface)
                return conn.send_and_get_reply(new_method_call(addr, member), timeout=10).body[0]

            with open_dbus_connection(bus=bus.address) as conn:
                xml = ask(conn, "org.freedesktop.DBus.Introspectable", "Introspect")
                status = ask(conn, "dev.signaltty.Signaltty1", "Status")
        finally:
            d.stop()
            bus.stop()
    interfaces = ET.fromstring(xml).findall("interface")
    (iface,) = [i for i in interfaces if i.get("name") == "dev.signaltty.Signaltty1"]
    return iface, status


def _args(cell: str) -> list[tuple[str, str]]:
    """```s pane_id`, `s title``` → [("s", "pane_id"), ("s", "title")]; "—" → []."""
    if cell == "—":
        return []
    return [tuple(_code(part).split(" ")) for part in cell.split(", ")]  # type: ignore[misc]


def _xml_args(member: ET.Element, direction: str | None) -> list[tuple[str, str]]:
    return [
        (a.get("type", ""), a.get("name", ""))
        for a in member.findall("arg")
        if direction is None or a.get("direction", "in") == direction
    ]


DESKTOP = REPO / "docs" / "desktop.md"


def test_dbus_methods_in_the_docs_match_the_introspection(introspected):
    iface, _ = introspected
    rows = _table_after(DESKTOP.read_text(), "### Methods")
    doc = {_code(r[0]): (_args(r[1]), _args(r[2])) for r in rows}
    live = {
        m.get("name"): (_xml_args(m, "in"), _xml_args(m, "out")) for m in iface.findall("method")
    }
    assert doc == live


def test_dbus_signals_in_the_docs_match_the_introspection(introspected):
    iface, _ = introspected
    rows = _table_after(DESKTOP.read_text(), "### Signals")
    doc = {_code(r[0]): _args(r[1]) for r in rows}
    live = {s.get("name"): _xml_args(s, None) for s in iface.findall("signal")}
    assert doc == live


def test_dbus_properties_in_the_docs_match_the_introspection(introspected):
    iface, _ = introspected
    rows = _table_after(DESKTOP.read_text(), "### Properties")
    doc = {_code(r[0]): (_code(r[1]), _code(r[2])) for r in rows}
    emits = "org.freedesktop.DBus.Property.EmitsChangedSignal"
    live = {}
    for prop in iface.findall("property"):
        assert prop.get("access") == "read"
        notes = {a.get("name"): a.get("value") for a in prop.findall("annotation")}
        live[prop.get("name")] = (prop.get("type"), notes.get(emits, "true"))
    assert doc == live


def test_dbus_status_keys_in_the_docs_match_a_real_reply(introspected):
    _, status = introspected
    rows = _table_after(DESKTOP.read_text(), "`Status` keys:")
    doc = {_code(r[0]): _code(r[1]) for r in rows}
    assert doc == {key: sig for key, (sig, _value) in status.items()}


# ---------------------------------------------------------------- notification modes


def test_which_events_notify_in_the_docs_matches_the_policy():
    from signaltty.desktop import policy

    rows = _table_after(DESKTOP.read_text(), "### Which events notify")
    doc = {_code(r[0]): [c == "✓" for c in r[2:5]] for r in rows}
    assert all(c in ("✓", "–") for r in rows for c in r[2:5])
    assert list(doc) == list(policy.CAUSE_PRIORITY)  # "most urgent first" is the table's order
    for cause, marks in doc.items():
        assert marks == [policy.mode_allows(m, cause) for m in policy.MODES], cause


def test_urgency_and_expiry_in_the_docs_match_the_policy():
    from signaltty.desktop import policy

    rows = _table_after(DESKTOP.read_text(), "| cause | title | urgency | expires |")
    seen = set()
    for causes, _title, urgency, expires in rows:
        for cause in re.findall(r"`(\w+)`", causes):
            seen.add(cause)
            view = policy.PaneView(pane_id="p", name="n", display_name="A", attention="unread")
            c = policy.render(cause, None, None, view, policy.Settings(), actions=True)
            assert c.urgency == urgency, cause
            assert (expires == "never") == (not c.expires), cause
    assert seen == set(policy.CAUSE_PRIORITY)


SOURCES = sorted((REPO / "signaltty").rglob("*.py"))


def test_docstrings_and_comments_cite_only_files_in_the_repository():
    """Every backticked path in the package's own text names a file that exists (issue 14
    item 7): a module moved or renamed leaves no stale pointer behind."""
    missing = []
    for source in SOURCES:
        text = source.read_text()
        missing += [
            f"{source.relative_to(REPO)}: {p}"
            for p in _cited_paths(text)
            if p.endswith((".py", ".toml", ".md", ".json", ".service", ".plist", "/"))
            and not p.startswith("signaltty/_")  # wheel-only copies (pyproject force-include)
            and not _exists(p, source.parent)
        ]
    assert not missing, "stale file references:\n" + "\n".join(missing)
