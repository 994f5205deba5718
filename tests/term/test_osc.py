"""OscScanner: table of byte inputs fed whole, byte by byte and at every split point.

Spec: agents.md §7.1–§7.5, states.md §3.2 and §9.4 (N1–N6, N9–N12).
"""

from __future__ import annotations

import random

import pytest

from signaltty.core.limits import (
    MAX_NOTIFICATION_BODY,
    MAX_NOTIFICATION_TITLE,
    MAX_OSC_PAYLOAD,
    MAX_TITLE,
)
from signaltty.term.osc import (
    _QUIET_MIN,
    QUERY_DA1,
    QUERY_DSR_CURSOR,
    QUERY_DSR_STATUS,
    QUERY_FOREGROUND,
    Bell,
    Cwd,
    Item,
    Notify,
    OscScanner,
    ProgramStatus,
    Progress,
    PromptStart,
    Query,
    Reset,
    Title,
)
from signaltty.term.progress import ProgressState

ITEM_TYPES = (Title, Notify, Progress, ProgramStatus, PromptStart, Cwd, Bell, Query, Reset)
ESC = b"\x1b"
ST = b"\x1b\\"
BEL = b"\x07"


def feed_chunks(chunks: list[bytes], **kwargs: str) -> list[Item]:
    scanner = OscScanner(**kwargs)
    items: list[Item] = []
    for chunk in chunks:
        items.extend(scanner.feed(chunk))
    items.extend(scanner.feed_eof())
    return items


def scan_every_way(data: bytes, **kwargs: str) -> list[Item]:
    """Feed whole, byte by byte and split at every point; all must agree."""
    whole = feed_chunks([data], **kwargs)
    assert feed_chunks([data[i : i + 1] for i in range(len(data))], **kwargs) == whole
    for cut in range(len(data) + 1):
        assert feed_chunks([data[:cut], data[cut:]], **kwargs) == whole, cut
    return whole


def osc(payload: bytes, term: bytes = BEL) -> bytes:
    return b"\x1b]" + payload + term


# (id, input bytes, expected items given the end offset of the whole input as `n`)
CASES: list[tuple[str, bytes, list[Item]]] = [
    # states.md §9.4 rows at scanner level.
    ("N1", osc(b"9;Build finished"), [Notify(19, "osc9", None, "Build finished")]),
    ("N2", osc(b"777;notify;Deploy;done", ST), [Notify(26, "osc777", "Deploy", "done")]),
    ("N3", osc(b"99;i=1:d=0;Hello", ST), [Notify(20, "osc99", None, "Hello")]),
    ("N4", osc(b"99;Greeting;Hello"), [Notify(20, "osc99", "Greeting", "Hello")]),
    ("N5", BEL, [Bell(1)]),
    ("N6", osc(b"0;hi"), [Title(7, 0, "hi")]),
    ("N9", osc(b"9;4;1;50"), [Progress(11, ProgressState.NORMAL, 50, "4;1;50")]),
    ("N10", osc(b"9;4;0;0"), [Progress(10, ProgressState.NONE, 0, "4;0;0")]),
    ("N11", osc(b"9;9;/home/u", ST), []),
    ("N12", osc(b"9;Build ok"), [Notify(13, "osc9", None, "Build ok")]),
    # Titles.
    ("title1", osc(b"1;icon", ST), [Title(10, 1, "icon")]),
    ("title2", osc(b"2;win"), [Title(8, 2, "win")]),
    ("title-empty", osc(b"0;"), []),
    ("title-blank", osc(b"2;  \t "), []),
    ("title-no-pt", osc(b"0"), []),
    ("title-bidi", osc("0;ab\u202ecd\u2066e".encode()), [Title(16, 0, "abcde")]),
    ("title-invalid-utf8", osc(b"2;caf\xff!"), [Title(10, 2, "caf\ufffd!")]),
    ("title-arrow-9c", osc("0;➜ dir".encode()), [Title(12, 0, "➜ dir")]),
    ("title-c1-csi", osc(b"0;a\xc2\x9b31mb"), [Title(12, 0, "ab")]),
    ("title-c0", osc(b"0;a\nb\x01c"), [Title(10, 0, "a b c")]),  # §7.7: controls in titles become spaces
    ("title-leading-zero", osc(b"00;x"), []),
    ("ps-leading-zero", osc(b"09;hello"), []),
    ("ps-not-numeric", osc(b"L;icon"), []),
    ("osc-empty", osc(b""), []),
    ("osc-8-link", osc(b"8;;https://x.org", ST), []),
    ("osc-52", osc(b"52;c;aGk="), []),
    # Notifications.
    ("osc9-multiline-body", osc(b"9;a\tb"), [Notify(8, "osc9", None, "a\tb")]),
    ("osc9-empty", osc(b"9;"), []),
    ("osc9-blank", osc(b"9;   "), []),
    ("osc9-conemu-1", osc(b"9;1;500"), []),
    ("osc9-conemu-12", osc(b"9;12"), []),
    ("osc9-progress-invalid", osc(b"9;4;7;1"), []),
    ("osc9-progress-no-state", osc(b"9;4"), []),
    ("osc9-13-is-text", osc(b"9;13;x"), [Notify(9, "osc9", None, "13;x")]),
    ("osc9-number-text", osc(b"9;3 files"), [Notify(12, "osc9", None, "3 files")]),
    ("osc99-no-meta", osc(b"99;Hello"), [Notify(11, "osc99", None, "Hello")]),
    ("osc99-empty-meta", osc(b"99;;Hello"), [Notify(12, "osc99", None, "Hello")]),
    ("osc99-colon-meta", osc(b"99;a:b;Hi"), [Notify(12, "osc99", None, "Hi")]),
    ("osc99-body-semicolon", osc(b"99;T;a;b"), [Notify(11, "osc99", "T", "a;b")]),
    ("osc99-empty-body", osc(b"99;Greeting;"), []),
    ("osc777-no-title", osc(b"777;notify;;body"), [Notify(19, "osc777", None, "body")]),
    ("osc777-no-body", osc(b"777;notify;T"), []),
    ("osc777-other-verb", osc(b"777;preexec;a;b"), []),
    ("osc777-body-semicolon", osc(b"777;notify;T;a;b"), [Notify(19, "osc777", "T", "a;b")]),
    # Program status, prompt, cwd.
    ("7501-report", osc(b"7501;state=working", ST), [ProgramStatus(22, "state=working", 22)]),
    ("7501-empty", osc(b"7501;"), []),
    ("7501-query", osc(b"7501;?", ST), [Query(10, "7501", b"\x1b]7501;?\x1b\\")]),
    ("7501-query-bel", osc(b"7501;?"), [Query(9, "7501", b"\x1b]7501;?\x07")]),
    ("7501-query-more", osc(b"7501;?v=1"), [Query(12, "7501", b"\x1b]7501;?v=1\x07")]),
    ("133-A", osc(b"133;A"), [PromptStart(8)]),
    ("133-A-params", osc(b"133;A;cl=m", ST), [PromptStart(14)]),
    ("133-B", osc(b"133;B"), []),
    ("133-AB", osc(b"133;AB"), []),
    ("osc7-empty-host", osc(b"7;file:///tmp"), [Cwd(16, "/tmp")]),
    ("osc7-localhost", osc(b"7;file://LocalHost/a%20b/%C3%A9", ST), [Cwd(35, "/a b/é")]),
    ("osc7-bad-escape", osc(b"7;file:///x%FFy"), [Cwd(18, "/x\ufffdy")]),
    ("osc7-nul", osc(b"7;file:///x%00y"), []),
    ("osc7-other-host", osc(b"7;file://elsewhere/tmp"), []),
    ("osc7-no-path", osc(b"7;file://localhost"), []),
    ("osc7-not-file", osc(b"7;http://localhost/tmp"), []),
    # Queries.
    ("da1", b"\x1b[c", [Query(3, QUERY_DA1, b"\x1b[c")]),
    ("da1-0", b"\x1b[0c", [Query(4, QUERY_DA1, b"\x1b[0c")]),
    ("dsr5", b"\x1b[5n", [Query(4, QUERY_DSR_STATUS, b"\x1b[5n")]),
    ("dsr6", b"\x1b[6n", [Query(4, QUERY_DSR_CURSOR, b"\x1b[6n")]),
    ("da2-not-query", b"\x1b[>c", []),
    ("decxcpr-not-query", b"\x1b[?6n", []),
    ("da1-1-not-query", b"\x1b[1c", []),
    ("csi-params-not-query", b"\x1b[1;6n", []),
    ("csi-long-not-query", b"\x1b[" + b";" * 40 + b"6n", []),
    ("sgr", b"\x1b[1;31mred\x1b[0m", []),
    ("osc10", osc(b"10;?"), [Query(7, QUERY_FOREGROUND, b"\x1b]10;?\x07")]),
    ("osc11-st", osc(b"11;?", ST), [Query(8, "osc11", b"\x1b]11;?\x1b\\")]),
    ("osc10-set", osc(b"10;rgb:0/0/0"), []),
    # CSI with controls inside.
    ("csi-bel", b"\x1b[3\x07m", [Bell(4)]),
    ("csi-bel-then-query", b"\x1b[\x076n", [Bell(3), Query(5, QUERY_DSR_CURSOR, b"\x1b[6n")]),
    ("csi-can", b"\x1b[6\x18n\x07", [Bell(6)]),
    ("csi-sub", b"\x1b[6\x1an", []),
    ("csi-esc", b"\x1b[3" + osc(b"0;t"), [Title(9, 0, "t")]),
    ("csi-utf8-aborts", "\x1b[6én".encode(), []),
    ("csi-del-ignored", b"\x1b[6\x7fn", [Query(5, QUERY_DSR_CURSOR, b"\x1b[6n")]),
    # Escape strings.
    ("dcs-bel", b"\x1bPq\x07#0;2\x1b\\\x07", [Bell(11)]),
    ("apc-bel", b"\x1b_G\x07x\x1b\\", []),
    ("pm-sos", b"\x1b^\x07\x1b\\\x1bX\x07\x1b\\", []),
    ("dcs-can", b"\x1bPabc\x18\x07", [Bell(7)]),
    ("dcs-esc-osc", b"\x1bPab" + osc(b"0;x"), [Title(10, 0, "x")]),
    ("dcs-esc-other", b"\x1bPab\x1bx\x07", [Bell(7)]),
    # Aborts and escapes.
    ("osc-esc-osc", osc(b"0;abc\x1b]0;def"), [Title(15, 0, "def")]),
    ("osc-esc-other", b"\x1b]0;abc\x1bxrest\x07", [Bell(14)]),
    ("osc-esc-ris", b"\x1b]0;abc\x1bc", [Reset(9)]),
    ("osc-esc-bel", b"\x1b]0;abc\x1b\x07", [Bell(9)]),
    ("osc-can", b"\x1b]0;abc\x18def\x07", [Bell(12)]),
    ("osc-sub", b"\x1b]9;abc\x1adef" + ST, []),
    ("ris", b"\x1bc", [Reset(2)]),
    ("ris-twice", b"x\x1bcy\x1bc", [Reset(3), Reset(6)]),
    ("esc-utf8", "\x1bé\x07".encode(), [Bell(4)]),
    ("stray-st", b"\x1b\\\x07", [Bell(3)]),
    ("charset", b"\x1b(B\x07", [Bell(4)]),
    ("charset-bel-inside", b"\x1b(\x07B", [Bell(3)]),
    ("esc-esc", b"\x1b\x1b]0;t\x07", [Title(7, 0, "t")]),
    ("c1-osc-not-interpreted", b"\xc2\x9d0;x\x07", [Bell(6)]),
    ("c1-csi-not-interpreted", b"\xc2\x9b6n", []),
    ("plain-arrow", "➜ done\x07".encode(), [Bell(9)]),
    # Runs of SGR (the fast path) followed by what it must stop at.
    ("sgr-bel-sgr", b"\x1b[31m\x07\x1b[0m\x07", [Bell(6), Bell(11)]),
    ("sgr-text-query", b"\x1b[31mab\x1b[m\x1b[6n", [Query(14, QUERY_DSR_CURSOR, b"\x1b[6n")]),
    ("sgr-osc", b"\x1b[1m\x1b[0m" + osc(b"2;t"), [Title(14, 2, "t")]),
    ("sgr-incomplete", b"\x1b[1mx\x1b[38;5", []),
    ("sgr-then-ris", b"\x1b[1m\x1bc", [Reset(6)]),
    # Caps at N and N + 1 characters after sanitizing.
    ("title-at-cap", osc(b"0;" + b"t" * MAX_TITLE), [Title(MAX_TITLE + 5, 0, "t" * MAX_TITLE)]),
    (
        "title-over-cap",
        osc(b"0;" + b"t" * (MAX_TITLE + 1)),
        [Title(MAX_TITLE + 6, 0, "t" * (MAX_TITLE - 1) + "…")],
    ),
    (
        "notify-caps",
        osc(
            b"777;notify;"
            + b"T" * (MAX_NOTIFICATION_TITLE + 1)
            + b";"
            + b"B" * MAX_NOTIFICATION_BODY
        ),
        [
            Notify(
                MAX_NOTIFICATION_TITLE + MAX_NOTIFICATION_BODY + 16,
                "osc777",
                "T" * (MAX_NOTIFICATION_TITLE - 1) + "…",
                "B" * MAX_NOTIFICATION_BODY,
            )
        ],
    ),
    (
        "notify-body-over-cap",
        osc(b"9;" + b"B" * (MAX_NOTIFICATION_BODY + 1)),
        [Notify(MAX_NOTIFICATION_BODY + 6, "osc9", None, "B" * (MAX_NOTIFICATION_BODY - 1) + "…")],
    ),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_table(data: bytes, expected: list[Item]) -> None:
    assert scan_every_way(data) == expected


def test_titles_seen_again_give_the_same_items() -> None:
    """A scanner remembers title payloads it decoded (issue 12: Codex cycles its spinner
    in the title): a title seen again, also after the memory was emptied at its cap, is
    the same item as from a scanner that never saw it."""
    payloads = [b"0;a\xe2\xa0\x8b work", b"2;caf\xff!", b"1;a\nb", b"0;", b"9;note", b"0;x" * 200]
    payloads += [f"2;t{i}".encode() for i in range(40)]  # past the cap: the memory is emptied
    stream = b"".join(osc(p) for p in payloads)
    reused = OscScanner()
    first = reused.feed(stream)
    again = reused.feed(stream + osc(b"0;a", ST))
    fresh = OscScanner()
    fresh.resume_at(len(stream))  # same offsets as `reused`, nothing seen
    assert again == fresh.feed(stream + osc(b"0;a", ST))
    assert again[-1] == Title(2 * len(stream) + 7, 0, "a")
    assert [(type(i), getattr(i, "text", None)) for i in again[:-1]] == [
        (type(i), getattr(i, "text", None)) for i in first
    ]
    assert again[0] == Title(len(stream) + 14, 0, "a\u280b work")
    assert len(first) == len(payloads) - 1  # "0;" is an empty title: no item


def test_n12_split_across_reads() -> None:
    scanner = OscScanner()
    assert scanner.feed(b"\x1b]9;Bu") == []
    assert scanner.feed(b"ild ok\x07") == [Notify(13, "osc9", None, "Build ok")]


def test_trailing_lone_esc_carries_over() -> None:
    scanner = OscScanner()
    assert scanner.feed(b"abc\x1b") == []
    assert scanner.feed(b"]0;t\x07") == [Title(9, 0, "t")]


def test_osc7_hostname() -> None:
    data = osc(b"7;file://MyHost.lan/srv")
    assert scan_every_way(data, hostname="myhost.lan") == [Cwd(len(data), "/srv")]
    assert scan_every_way(data) == []


def pad_title(payload_len: int) -> bytes:
    """An OSC 0 whose payload (between ``ESC ]`` and the terminator) has this many bytes."""
    return b"0;" + b"a" * (payload_len - 2)


@pytest.mark.parametrize("term", [BEL, ST], ids=["bel", "st"])
def test_payload_at_limit_is_kept(term: bytes) -> None:
    data = osc(pad_title(MAX_OSC_PAYLOAD), term) + BEL
    items = scan_every_way(data)
    assert items == [Title(len(data) - 1, 0, "a" * (MAX_TITLE - 1) + "…"), Bell(len(data))]


@pytest.mark.parametrize("term", [BEL, ST], ids=["bel", "st"])
def test_payload_over_limit_is_dropped(term: bytes) -> None:
    data = osc(pad_title(MAX_OSC_PAYLOAD + 1), term) + BEL
    assert scan_every_way(data) == [Bell(len(data))]


def test_oversize_memory_is_bounded_and_abortable() -> None:
    scanner = OscScanner()
    scanner.feed(b"\x1b]9;")
    for _ in range(64):
        assert scanner.feed(b"x" * 4096) == []
        assert len(scanner._buf) <= MAX_OSC_PAYLOAD
    # ESC ] aborts the oversized OSC and starts a new one.
    assert scanner.feed(osc(b"0;ok")) == [Title(scanner.offset, 0, "ok")]


def test_feed_eof_discards_partial_sequence() -> None:
    scanner = OscScanner()
    assert scanner.feed(b"\x1b]0;unfinished") == []
    assert scanner.feed_eof() == []
    assert scanner.feed(BEL) == [Bell(15)]


def test_reset_keeps_offset() -> None:
    scanner = OscScanner()
    scanner.feed(b"\x1b]0;half")
    scanner.reset()
    assert scanner.offset == 8
    assert scanner.feed(b";x\x07") == [Bell(11)]


def test_empty_feed_is_noop() -> None:
    scanner = OscScanner()
    scanner.feed(b"\x1b]0;a")
    assert scanner.feed(b"") == []
    assert scanner.offset == 5
    assert scanner.feed(BEL) == [Title(6, 0, "a")]


def test_offsets_are_absolute_stream_positions() -> None:
    parts = [b"hello", BEL, osc(b"0;t"), b"text" * 3, b"\x1b[6n", osc(b"9;n", ST), b"\x1bc"]
    data = b"".join(parts)
    ends = [sum(len(p) for p in parts[: k + 1]) for k in range(len(parts))]
    items = scan_every_way(data)
    assert [item.offset for item in items] == [ends[1], ends[2], ends[4], ends[5], ends[6]]
    for item in items:
        assert data[: item.offset].endswith((BEL, ST, b"n", b"c"))
    # Offsets keep counting across feed() calls.
    scanner = OscScanner()
    scanner.feed(b"x" * 100)
    assert scanner.feed(BEL) == [Bell(101)]


def test_items_are_frozen_and_slotted() -> None:
    bell = Bell(1)
    with pytest.raises(AttributeError):
        bell.offset = 2  # type: ignore[misc]
    assert not hasattr(bell, "__dict__")


# Fuzz: bytes biased towards the ones that drive the state machine.
_ALPHABET = b"\x1b\x07\x18\x1a]\\[P_X^cnm;?=:0123456789A/\xc2\x9c\x9d\x9b\xe2\x9e\x7f\n ab"


def _random_bytes(rng: random.Random, size: int) -> bytes:
    if rng.random() < 0.3:
        return rng.randbytes(size)
    return bytes(rng.choice(_ALPHABET) for _ in range(size))


def test_fuzz_never_raises_and_only_yields_items() -> None:
    rng = random.Random(20240501)
    for _ in range(1500):
        data = _random_bytes(rng, rng.randrange(1, 300))
        whole = feed_chunks([data])
        assert all(isinstance(item, ITEM_TYPES) for item in whole)
        offsets = [item.offset for item in whole]
        assert offsets == sorted(offsets)
        assert all(0 < off <= len(data) for off in offsets)
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randrange(1, 8))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert feed_chunks(chunks) == whole


def test_fuzz_long_stream() -> None:
    rng = random.Random(7)
    scanner = OscScanner()
    total = 0
    for _ in range(200):
        chunk = _random_bytes(rng, rng.randrange(0, 20000))
        total += len(chunk)
        for item in scanner.feed(chunk):
            assert isinstance(item, ITEM_TYPES)
            assert item.offset <= total
        assert len(scanner._buf) <= MAX_OSC_PAYLOAD
    assert scanner.offset == total


class _SteppingScanner(OscScanner):
    """The scanner without its shortcuts: every read scanned from its first byte, every CSI
    and OSC byte stepped one at a time (the behaviour before issue 12's shortcuts)."""

    skip_quiet = False

    def _whole_osc(self, chunk: bytes, esc: int, base: int, items: list[Item]) -> int:
        return esc

    def _scan_csi(self, chunk: bytes, i: int, base: int, items: list[Item]) -> int:
        return self._step(chunk[i], base + i + 1, items, i)


# SGR-dense agent output with the pieces the shortcuts must not miss: queries with C0 or
# DEL inside, strings, RIS, titles, BEL, CAN/SUB, UTF-8 holding 0x9b-0x9d, long CSIs.
_PIECES = (
    b"\x1b[0m", b"\x1b[38;2;12;34;56m", b"\x1b[1;31m", b"text ", b"0c5n6n[c", b"\r\n",
    b"\x1b[6n", b"\x1b[5n", b"\x1b[c", b"\x1b[0c", b"\x1b[6\x08n", b"\x1b[0\r\nc",
    b"\x1b[\x7fc", b"\x1b[5\x18n", b"\x1b[6\x1b[n", b"\x1b[?6n", b"\x1b[>c", b"\x1b[6 n",
    b"\x1b[" + b"1;" * 9 + b"6n", b"\x1b]0;title\x07", b"\x1b]2;t\x1b\\", b"\x1b]9;note\x07",
    b"\x1b\x08]0;x\x07", b"\x1bPq#0\x07\x1b\\", b"\x1b_apc\x1b\\", b"\x1bc", b"\x07",
    b"\x1b(B", b"\x1b", b"\x1b[", b"\xe2\x9e\x9c", b"\x9b6n", b"\x1a", b"\x1b\x7f]1;i\x07",
    b"\x1b]0;" + b"x" * (MAX_OSC_PAYLOAD - 2) + b"\x07",  # at the payload limit: kept
    b"\x1b]0;" + b"x" * (MAX_OSC_PAYLOAD - 1) + b"\x1b\\",  # one over: dropped
    b"\x1b]0;a\x18b\x07", b"\x1b]9;a\x1ab\x1b\\", b"\x1b]9;a\x1b]0;b\x07",
)


def test_shortcuts_give_the_stepping_scanners_items_and_state() -> None:
    """Issue 12: the quiet-read check and the CSI run are exact for any stream and cut."""
    rng = random.Random(1212)
    quiet = [p for p in _PIECES if p.endswith((b"m", b" ", b"\n", b"(B", b"\x9c"))]
    quiet_reads = 0
    for _ in range(3000):
        if rng.random() < 0.2:
            data = _random_bytes(rng, rng.randrange(1, 2000))
        else:  # reads up to ~6 KB: the quiet check runs on reads of _QUIET_MIN bytes or more
            loud = rng.choice((0.0, 0.002, 0.01, 0.05, 0.3))
            data = b"".join(
                rng.choice(_PIECES) if rng.random() < loud else rng.choice(quiet)
                for _ in range(rng.randrange(1, 600))
            )
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randrange(1, 6))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        fast, slow = OscScanner(), _SteppingScanner()
        for chunk in chunks:
            quiet_reads += fast._skip_quiet(chunk, 0) > 0 and len(chunk) >= _QUIET_MIN
            assert fast.feed(chunk) == slow.feed(chunk), data
            assert (fast._state, bytes(fast._buf), fast._overflow) == (
                slow._state,
                bytes(slow._buf),
                slow._overflow,
            ), data
    assert quiet_reads > 300  # the shortcut itself was taken, not only the stepping path


def test_a_quiet_read_is_not_stepped() -> None:
    """SGR-dense output starting mid-CSI: no byte goes through the one-byte step except at
    the two cuts (issue 12: stepping cost 10-13 ms per MB)."""
    body = b"".join(b"\x1b[38;2;%d;%d;%dmword\x1b[0m " % (i % 256, i % 7, i % 13) for i in range(300))
    steps = 0

    class Counting(OscScanner):
        def _step(self, byte: int, end: int, items: list[Item], i: int) -> int:
            nonlocal steps
            steps += 1
            return super()._step(byte, end, items, i)

    scanner = Counting()
    scanner.feed(body[:5])  # ends inside "\x1b[38;"
    steps = 0
    assert scanner.feed(body[5:-3]) == []
    assert steps <= 4
