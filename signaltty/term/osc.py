"""Byte-stream scanner for OSC, BEL, RIS and terminal queries (pure; Spec: agents.md §7.1).

Layer rule: no I/O; imports only ``signaltty.core`` and the standard library.

Design notes:

* Only 7-bit introducers and terminators are recognised: ``ESC ]``, ``ESC [``, ``ESC \\``
  and BEL. The C1 bytes 0x9B (CSI), 0x9D (OSC) and 0x9C (ST) are never interpreted
  because the stream is UTF-8, where they are ordinary continuation bytes (for example
  "➜" is ``E2 9E 9C``). So the ground-state hot path skips plain text with ``bytes.find``
  for ESC and BEL and steps byte by byte only inside a sequence. At an ESC, one
  possessive regex skips a run of whole CSIs that cannot be queries plus the text between
  them (SGR colours dominate agent output; about 8x faster than stepping them).
* ``ESC P`` (DCS), ``ESC X`` (SOS), ``ESC ^`` (PM) and ``ESC _`` (APC) strings end only at
  ST; their contents (including BEL) are skipped unscanned.
* Inside an OSC or string, ``ESC`` not followed by ``\\`` aborts it; the byte after the
  ESC is reprocessed as the second byte of a new escape sequence (so ``ESC ]`` starts a
  new OSC). CAN (0x18) and SUB (0x1A) abort any sequence. C0 controls inside CSI and
  escape sequences are executed as in xterm (a BEL there is a bell); other C0 controls
  inside an OSC stay in the payload and are handled by the sanitizer (a newline in a
  title becomes a space, a notification body keeps it).
* An OSC payload longer than ``MAX_OSC_PAYLOAD`` bytes (counted raw, between ``ESC ]``
  and the terminator) is dropped and skipped to its terminator; memory stays bounded.
* A malformed sequence never raises; it aborts to the ground state.
* Shortcuts (issue 12), each exact against stepping every byte (tests/term/test_osc.py):
  a read of ``_QUIET_MIN`` bytes or more that cannot hold an item nor start a string is
  scanned from its last ESC (``_QUIET_TABLE``); a CSI's parameters are taken in one run; a
  whole OSC inside one read is found by one search (``_whole_osc``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import unquote

from signaltty.core.limits import (
    MAX_NOTIFICATION_BODY,
    MAX_NOTIFICATION_TITLE,
    MAX_OSC_PAYLOAD,
    MAX_TITLE,
)
from signaltty.core.sanitize import sanitize_text
from signaltty.term.progress import ProgressState, parse_progress

NotifySource = Literal["osc9", "osc99", "osc777"]

# Query kinds (agents.md §7.4, §7.5); term/replies.py decides which ones are answered.
QUERY_PROGRAM_STATUS: Final = "7501"  # OSC 7501;?
QUERY_DA1: Final = "da1"  # CSI c, CSI 0 c
QUERY_DSR_STATUS: Final = "dsr5"  # CSI 5 n
QUERY_DSR_CURSOR: Final = "dsr6"  # CSI 6 n
QUERY_FOREGROUND: Final = "osc10"  # OSC 10;?
QUERY_BACKGROUND: Final = "osc11"  # OSC 11;?


@dataclass(frozen=True, slots=True)
class Title:
    """OSC 0/1/2 title (states.md §3.2).

    Attributes:
        offset: absolute stream offset (bytes) just after the terminator.
        which: 0 (icon and window), 1 (icon) or 2 (window).
        text: sanitized one-line title, 1–MAX_TITLE characters.
    """

    offset: int
    which: int
    text: str


@dataclass(frozen=True, slots=True)
class Notify:
    """OSC 9/99/777 desktop notification (states.md §3.2, N1–N4).

    Attributes:
        offset: absolute stream offset (bytes) just after the terminator.
        source: ``"osc9"``, ``"osc99"`` or ``"osc777"``.
        title: sanitized one-line title (≤ MAX_NOTIFICATION_TITLE chars), or None.
        body: sanitized body, newlines and tabs kept, 1–MAX_NOTIFICATION_BODY chars.
    """

    offset: int
    source: NotifySource
    title: str | None
    body: str


@dataclass(frozen=True, slots=True)
class Progress:
    """Valid OSC 9;4 progress; ``percent`` 0–100 or None; ``raw`` = payload after ``9;``."""

    offset: int
    state: ProgressState
    percent: int | None
    raw: str


@dataclass(frozen=True, slots=True)
class ProgramStatus:
    """OSC 7501 report; ``payload`` is the raw text after ``7501;`` (parsed later);
    ``size`` the whole sequence in bytes, introducer and terminator included (0 = unknown)."""

    offset: int
    payload: str
    size: int = 0


@dataclass(frozen=True, slots=True)
class PromptStart:
    """OSC 133;A shell prompt start."""

    offset: int


@dataclass(frozen=True, slots=True)
class Cwd:
    """OSC 7 working-directory report (agents.md §7.2).

    Attributes:
        offset: absolute stream offset (bytes) just after the terminator.
        path: absolute path, percent-decoded (UTF-8, replacement on errors), no NUL;
            the store still checks that it is an existing directory.
    """

    offset: int
    path: str


@dataclass(frozen=True, slots=True)
class Bell:
    """BEL (0x07) outside any escape string."""

    offset: int


@dataclass(frozen=True, slots=True)
class Query:
    """Terminal query that may need a reply (term/replies.py; agents.md §7.4, §7.5).

    Attributes:
        offset: absolute stream offset (bytes) just after the query's last byte.
        kind: one of the ``QUERY_*`` constants (``"7501"``, ``"da1"``, ``"dsr5"``,
            ``"dsr6"``, ``"osc10"``, ``"osc11"``).
        raw: for OSC queries the bytes as received, terminator included (a reply is
            "terminated like the query"); for CSI queries ``ESC [ params final``
            without control bytes that were executed inside it.
    """

    offset: int
    kind: str
    raw: bytes


@dataclass(frozen=True, slots=True)
class Reset:
    """RIS ``ESC c`` (full reset) seen in the ground state."""

    offset: int


Item = Title | Notify | Progress | ProgramStatus | PromptStart | Cwd | Bell | Query | Reset

_ESC: Final = 0x1B
_BEL: Final = 0x07
_CAN: Final = 0x18
_SUB: Final = 0x1A
_DEL: Final = 0x7F
_ST_FINAL: Final = 0x5C  # "\" of ESC \

_GROUND, _ESC_STATE, _ESC_INTER, _CSI, _OSC, _OSC_ESC, _STR, _STR_ESC = range(8)

_CSI_MAX: Final = 16  # bytes of CSI params/intermediates kept; longer ones are no query
# From an ESC in the ground state: whole CSIs whose final byte is not "c" or "n" (so never
# a query) and the plain text between them, in one match that stops at BEL, at any other
# ESC and at an incomplete CSI. The byte classes of parameters, intermediates, final byte
# and text are disjoint, so the match is unambiguous and backtracking stays local.
# (No possessive quantifiers: CPython 3.11.0-3.11.x before the fix mis-matches them.)
_CSI_RUN: Final = re.compile(
    rb"(?:\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x62\x64-\x6d\x6f-\x7e][^\x07\x1b]*)*"
)
_CSI_RE: Final = re.compile(rb"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
_CSI_PARAMS: Final = re.compile(rb"[\x20-\x3f]*")
_OSC_STOP: Final = re.compile(rb"[\x07\x18\x1a\x1b]")
_STR_STOP: Final = re.compile(rb"[\x18\x1a\x1b]")
_PS_RE: Final = re.compile(rb"0|[1-9][0-9]{0,5}")
_CONEMU_RE: Final = re.compile(r"(?:[1-9]|1[0-2])(?:;|\Z)")
_QUERY_PS: Final = (b"7501", b"10", b"11")  # OSC numbers whose raw sequence is kept
# Title payloads remembered per scanner (raw bytes → sanitized text): agents cycle a few
# spinner titles ~10×/s (Codex), each decoded and sanitized again otherwise (issue 12).
# At most 32 payloads of ≤ 256 bytes each, so a pane's cache stays under 8 KiB.
_TITLE_CACHE_MAX: Final = 32
_TITLE_CACHE_BYTES: Final = 256
# A "quiet" read (issue 12): one starting in the ground state with no BEL and no byte pair
# that can start an OSC or string (ESC ] P X ^ _), a RIS (ESC c) or a query CSI
# ([ c, 0 c, 5 n, 6 n: the byte before a query's final is "[" or its only parameter). C0
# controls and DEL are executed or ignored inside escape sequences and CSIs without
# ending them, so they are deleted before the pairs are looked for; every first byte of
# such a pair maps to 0x01 and every second byte to 0x02, so one search finds all of
# them (other pairs of those classes, "0]" say, only send the read the slow way). Such a
# read yields nothing up to its last ESC, where every earlier sequence has been left, so
# the scan starts there: two C-level passes instead of one regex step per CSI, which cost
# 10-13 ms per MB of SGR-dense output.
_QUIET_TABLE: Final = bytes.maketrans(b"\x1b0[56]PX^_cn", b"\x01" * 5 + b"\x02" * 7)
_QUIET_MIN: Final = 512  # bytes; below, the check costs more than it saves (Codex: ~190)
_QUIET_DELETE: Final = bytes(b for b in range(0x20) if b != _ESC) + b"\x7f"
# CSI body (params + intermediates + final byte) → query kind.
_CSI_QUERIES: Final = {
    b"c": QUERY_DA1,
    b"0c": QUERY_DA1,
    b"5n": QUERY_DSR_STATUS,
    b"6n": QUERY_DSR_CURSOR,
}


def _native_loud() -> Callable[[bytes], bool] | None:
    """The quiet check's native form (``loud`` in screen/_native.c), or None. Imported when
    a scanner is made, not with this module: the screen package brings pyte, which the
    light importers of this module must not pay for (tests/test_imports.py)."""
    from signaltty.term.screen.native import loud

    return loud


class OscScanner:
    """Incremental scanner over a pane's raw PTY output.

    Items are yielded in byte order. Each carries ``offset``: the absolute stream position
    (bytes since the scanner was created) just after the byte that completed it, so a
    sequence split across ``feed`` calls at any byte yields identical items.

    Spec: agents.md §7.1, §7.2; states.md §3.2, §9.4.
    """

    #: Start a quiet read's scan at its last ESC (see ``_QUIET_TABLE``); the tests compare
    #: against scanners with this off.
    skip_quiet: bool = True

    def __init__(self, *, hostname: str | None = None) -> None:
        """Create a scanner in the ground state at stream offset 0.

        Args:
            hostname: this machine's host name; OSC 7 reports naming it (or no host, or
                ``localhost``) are accepted, others ignored. None accepts only the
                empty host and ``localhost``.
        """
        hosts = {"", "localhost"}
        if hostname:
            hosts.add(hostname.lower())
        self._hosts: frozenset[str] = frozenset(hosts)
        self._offset = 0
        self._buf = bytearray()
        self._titles: dict[bytes, str] = {}
        self._loud = _native_loud()
        self.reset()

    @property
    def offset(self) -> int:
        """Bytes fed so far (absolute stream offset of the next byte)."""
        return self._offset

    @property
    def at_ground(self) -> bool:
        """No sequence is partly read (a stream may be handed over here, issue 15)."""
        return self._state == _GROUND and not self._buf

    def resume_at(self, offset: int) -> None:
        """Go on with a stream handed over at byte ``offset`` in the ground state."""
        self.reset()
        self._offset = offset

    def reset(self) -> None:
        """Drop any partial sequence and return to the ground state; the offset is kept."""
        self._state = _GROUND
        self._buf.clear()
        self._overflow = False

    def feed_eof(self) -> list[Item]:
        """End of stream: an unfinished sequence is discarded.

        Returns:
            Always an empty list (nothing completes at EOF); the scanner is reset.
        """
        self.reset()
        return []

    def feed(self, chunk: bytes) -> list[Item]:
        """Scan one read of raw PTY output.

        Args:
            chunk: raw bytes, any length, split anywhere (even inside a sequence or a
                UTF-8 character); ``b""`` is a no-op, not EOF.

        Returns:
            Items completed in this chunk, in byte order.

        Raises:
            Nothing: malformed input aborts to the ground state.
        """
        base = self._offset
        self._offset = base + len(chunk)
        items: list[Item] = []
        n = len(chunk)
        i = 0
        # checked once, at the read's first ground state; a short read is stepped faster
        quiet = self.skip_quiet and n >= _QUIET_MIN
        while i < n:
            state = self._state
            if state == _GROUND:
                if quiet:
                    quiet = False
                    i = self._skip_quiet(chunk, i)
                esc = chunk.find(b"\x1b", i)
                stop = n if esc < 0 else esc
                bel = chunk.find(b"\x07", i, stop)
                while bel >= 0:
                    items.append(Bell(base + bel + 1))
                    bel = chunk.find(b"\x07", bel + 1, stop)
                if esc < 0:
                    break
                run = _CSI_RUN.match(chunk, esc)  # always matches, maybe empty
                i = run.end() if run is not None else esc
                if i > esc:
                    continue  # skipped whole non-query CSIs (and the text between them)
                csi = _CSI_RE.match(chunk, esc)
                if csi is None:
                    i = self._whole_osc(chunk, esc, base, items)
                    if i > esc:
                        continue
                    self._state = _ESC_STATE
                    i = esc + 1
                else:  # a whole query CSI (final "c" or "n") inside this chunk
                    i = csi.end()
                    kind = _CSI_QUERIES.get(chunk[esc + 2 : i])
                    if kind is not None:
                        items.append(Query(base + i, kind, chunk[esc:i]))
            elif state == _CSI:
                i = self._scan_csi(chunk, i, base, items)
            elif state == _OSC:
                i = self._scan_osc(chunk, i, base, items)
            elif state == _STR:
                match = _STR_STOP.search(chunk, i)
                if match is None:
                    break
                i = match.start()
                self._state = _STR_ESC if chunk[i] == _ESC else _GROUND
                i += 1
            else:
                i = self._step(chunk[i], base + i + 1, items, i)
        return items

    def _whole_osc(self, chunk: bytes, esc: int, base: int, items: list[Item]) -> int:
        """At an ESC in the ground state: the index after a whole OSC that starts there
        (dispatched as ``_scan_osc`` and ``_step`` would), else ``esc``."""
        start = esc + 2
        if chunk[esc + 1 : start] != b"]":
            return esc
        # the payload ends at the first BEL, ESC, CAN or SUB; one past the payload limit is
        # far enough to look (a longer OSC is dropped: the stepping path skips it)
        found = _OSC_STOP.search(chunk, start, start + MAX_OSC_PAYLOAD + 1)
        if found is None:
            return esc
        stop = found.start()
        if chunk[stop] == _BEL:
            terminator, end = b"\x07", stop + 1
        elif chunk[stop] == _ESC and chunk[stop + 1 : stop + 2] == b"\\":
            terminator, end = b"\x1b\\", stop + 2
        else:  # CAN or SUB, another sequence, or ESC as the read's last byte
            return esc
        self._osc_payload(chunk[start:stop], terminator, base + end, items)
        return end

    def _skip_quiet(self, chunk: bytes, i: int) -> int:
        """Index of the last ESC if ``chunk[i:]`` (ground state at ``i``) is quiet, else ``i``.

        The whole chunk is checked: what comes before ``i`` can only add pairs, so the
        check stays on the safe side.
        """
        last = chunk.rfind(b"\x1b")
        if last <= i:
            return i
        loud = self._loud
        if loud is not None:  # the same check in one native pass (a third of the time)
            return i if loud(chunk) else last
        if b"\x07" not in chunk and b"\x01\x02" not in chunk.translate(_QUIET_TABLE, _QUIET_DELETE):
            return last
        return i

    def _scan_csi(self, chunk: bytes, i: int, base: int, items: list[Item]) -> int:
        """Take a CSI's run of parameter and intermediate bytes at once, then step one byte.

        Same result as stepping each byte (``_csi_byte``): at most ``_CSI_MAX`` bytes are
        kept, one more marks the CSI as too long to be a query.
        """
        run = _CSI_PARAMS.match(chunk, i)  # always matches, maybe empty
        j = i if run is None else run.end()
        if j > i:
            if not self._overflow:
                room = _CSI_MAX - len(self._buf)
                self._buf += chunk[i : i + min(room, j - i)]
                self._overflow = j - i > room
            if j == len(chunk):
                return j
        return self._step(chunk[j], base + j + 1, items, j)

    def _scan_osc(self, chunk: bytes, i: int, base: int, items: list[Item]) -> int:
        """Collect OSC payload up to the next BEL/ESC/CAN/SUB; return the next index."""
        match = _OSC_STOP.search(chunk, i)
        stop = len(chunk) if match is None else match.start()
        if not self._overflow:
            if len(self._buf) + (stop - i) > MAX_OSC_PAYLOAD:
                self._overflow = True
                self._buf.clear()
            else:
                self._buf += chunk[i:stop]
        if match is None:
            return stop
        byte = chunk[stop]
        if byte == _BEL:
            self._osc_done(b"\x07", base + stop + 1, items)
        elif byte == _ESC:
            self._state = _OSC_ESC
        else:  # CAN / SUB
            self.reset()
        return stop + 1

    def _step(self, byte: int, end: int, items: list[Item], i: int) -> int:
        """Advance one byte in a non-ground state; return the index of the next byte.

        ``end`` is the absolute offset just after ``byte``; ``i`` its index in the chunk.
        A byte that aborts a string is not consumed (returned index is ``i``), so it is
        reprocessed as the second byte of an escape sequence.
        """
        state = self._state
        if state in (_OSC_ESC, _STR_ESC):
            if byte == _ST_FINAL:
                if state == _OSC_ESC:
                    self._osc_done(b"\x1b\\", end, items)
                else:
                    self.reset()
                return i + 1
            self.reset()
            self._state = _ESC_STATE  # abort the string; reprocess byte after its ESC
            return i
        if byte < 0x20:  # C0 control inside an escape or CSI: executed as in xterm
            if byte == _ESC:
                self.reset()
                self._state = _ESC_STATE
            elif byte in (_CAN, _SUB):
                self.reset()
            elif byte == _BEL:
                items.append(Bell(end))
            return i + 1
        if byte == _DEL:
            return i + 1
        if byte >= 0x80:  # not part of any 7-bit sequence: abort, it is plain text
            self.reset()
            return i + 1
        if state == _CSI:
            self._csi_byte(byte, end, items)
        elif state == _ESC_STATE:
            self._esc_byte(byte, end, items)
        elif byte >= 0x30:  # _ESC_INTER: final byte ends the sequence
            self.reset()
        return i + 1

    def _esc_byte(self, byte: int, end: int, items: list[Item]) -> None:
        """Handle the printable byte after ESC."""
        self.reset()
        if byte == 0x5B:  # [
            self._state = _CSI
        elif byte == 0x5D:  # ]
            self._state = _OSC
        elif byte in b"PX^_":
            self._state = _STR
        elif byte == 0x63:  # c: RIS
            items.append(Reset(end))
        elif byte < 0x30:
            self._state = _ESC_INTER

    def _csi_byte(self, byte: int, end: int, items: list[Item]) -> None:
        """Handle a printable byte inside a CSI (parameter, intermediate or final)."""
        if byte >= 0x40:
            self._csi_done(bytes(self._buf) + bytes((byte,)), end, items)
        elif self._overflow:
            return
        elif len(self._buf) < _CSI_MAX:
            self._buf.append(byte)
        else:
            self._overflow = True

    def _csi_done(self, body: bytes, end: int, items: list[Item]) -> None:
        """A CSI ended with ``body`` = params + intermediates + final; emit a query."""
        kind = None if self._overflow else _CSI_QUERIES.get(body)
        self.reset()
        if kind is not None:
            items.append(Query(end, kind, b"\x1b[" + body))

    def _osc_done(self, terminator: bytes, end: int, items: list[Item]) -> None:
        """A whole OSC was received; dispatch its payload (dropped if it overflowed)."""
        raw = bytes(self._buf)
        overflow = self._overflow
        self.reset()
        if not overflow:
            self._osc_payload(raw, terminator, end, items)

    def _osc_payload(self, raw: bytes, terminator: bytes, end: int, items: list[Item]) -> None:
        """Dispatch the payload ``raw`` (≤ MAX_OSC_PAYLOAD bytes) of an OSC that ended at
        ``end`` with ``terminator``; the scanner's state is not touched."""
        text = self._titles.get(raw)
        if text is not None:  # a title seen before: same item, without decoding again
            items.append(Title(end, raw[0] - 0x30, text))
            return
        ps, _, pt_bytes = raw.partition(b";")
        if _PS_RE.fullmatch(ps) is None:
            return
        seq = b"\x1b]" + raw + terminator if ps in _QUERY_PS else b""
        item = _dispatch(int(ps), pt_bytes.decode("utf-8", "replace"), end, self._hosts, seq)
        if item is not None:
            items.append(item)
            if isinstance(item, Title) and len(raw) <= _TITLE_CACHE_BYTES:
                if len(self._titles) >= _TITLE_CACHE_MAX:
                    self._titles.clear()
                self._titles[raw] = item.text


def _dispatch(ps: int, pt: str, end: int, hosts: frozenset[str], seq: bytes) -> Item | None:
    """Turn one OSC (number ``ps``, decoded text ``pt``) into an item, or None.

    ``seq`` is the whole sequence as received, for queries (empty for other numbers).
    """
    if ps in (0, 1, 2):
        text = sanitize_text(pt, MAX_TITLE)
        return Title(end, ps, text) if text else None
    if ps == 9:
        return _osc9(pt, end)
    if ps == 99:
        meta, sep, rest = pt.partition(";")
        if not sep:
            return _notify(end, "osc99", None, pt)
        is_meta = "=" in meta or ":" in meta
        return _notify(end, "osc99", None if is_meta else meta, rest)
    if ps == 777:
        verb, _, rest = pt.partition(";")
        title, sep, body = rest.partition(";")
        return _notify(end, "osc777", title, body) if verb == "notify" and sep else None
    if ps == 7501:
        if pt.startswith("?"):
            return Query(end, QUERY_PROGRAM_STATUS, seq)
        return ProgramStatus(end, pt, len(seq)) if pt else None
    if ps == 133:
        return PromptStart(end) if pt == "A" or pt.startswith("A;") else None
    if ps == 7:
        return _cwd(pt, end, hosts)
    if ps in (10, 11) and pt == "?":
        return Query(end, QUERY_FOREGROUND if ps == 10 else QUERY_BACKGROUND, seq)
    return None


def _osc9(pt: str, end: int) -> Item | None:
    """OSC 9: ConEmu ``9;<1–12>;…`` (only 4 = progress is used) or an iTerm2 notification."""
    if _CONEMU_RE.match(pt) is None:
        return _notify(end, "osc9", None, pt)
    parsed = parse_progress(pt) if pt.startswith("4;") else None
    if parsed is None:
        return None  # other ConEmu commands (e.g. 9;9 cwd) and invalid progress: ignored
    return Progress(end, parsed.state, parsed.percent, parsed.raw)


def _notify(end: int, source: NotifySource, title: str | None, body: str) -> Notify | None:
    """Sanitize and cap a notification; None when the body is empty."""
    clean_body = sanitize_text(body, MAX_NOTIFICATION_BODY, multiline=True)
    if not clean_body:
        return None
    clean_title = sanitize_text(title, MAX_NOTIFICATION_TITLE) if title else ""
    return Notify(end, source, clean_title or None, clean_body)


def _cwd(pt: str, end: int, hosts: frozenset[str]) -> Cwd | None:
    """OSC 7 ``file://<host>/<path>`` → Cwd with the percent-decoded path, or None.

    Percent escapes are decoded as UTF-8 with replacement, so a path that is not valid
    UTF-8 will not name an existing directory and the store ignores it.
    """
    if pt[:7].lower() != "file://":
        return None
    host, slash, path = pt[7:].partition("/")
    if not slash or host.lower() not in hosts:
        return None
    decoded = unquote("/" + path, errors="replace")
    return None if "\x00" in decoded else Cwd(end, decoded)
