"""The raw output ring keeps exactly the newest ``capacity`` bytes, in order, and once full
holds one buffer of that size (issue 12: a bytearray cut at the front kept an eighth more)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.core.limits import RAW_RING_BYTES
from signaltty.term.raw_ring import RawRing


@settings(max_examples=400, deadline=None)
@given(
    capacity=st.integers(min_value=1, max_value=64),
    chunks=st.lists(st.binary(max_size=150), max_size=40),
    initial=st.binary(max_size=150),
)
def test_keeps_the_newest_bytes_in_order(
    capacity: int, chunks: list[bytes], initial: bytes
) -> None:
    ring = RawRing(capacity, initial)
    written = initial
    assert bytes(ring) == written[-capacity:]
    for chunk in chunks:
        ring.write(chunk)
        written += chunk
        assert bytes(ring) == written[len(written) - min(len(written), capacity) :]
        assert len(ring) == min(len(written), capacity)


def test_a_full_ring_holds_one_buffer_of_its_capacity() -> None:
    ring = RawRing(RAW_RING_BYTES)
    grown = bytearray()  # what the pump did before: append, then cut at the front
    chunk = bytes(range(256)) * 16  # 4 KiB, a full PTY read
    for i in range(200):
        piece = chunk[i % 7 :]
        ring.write(piece)
        grown += piece
        if len(grown) > RAW_RING_BYTES:
            del grown[: len(grown) - RAW_RING_BYTES]
    assert bytes(ring) == bytes(grown)
    # the bytearray keeps its last growth's over-allocation; the ring does not
    assert sys.getsizeof(grown) > RAW_RING_BYTES * 1.05
    assert sys.getsizeof(ring._buf) < RAW_RING_BYTES + 128


def test_memoryview_and_bytearray_writes() -> None:
    ring = RawRing(8)
    ring.write(memoryview(b"abcdef"))
    ring.write(bytearray(b"ghij"))
    ring.write(memoryview(b"klmnopqrstuvwxyz")[3:9])
    assert bytes(ring) == b"ijnopqrs"


def test_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RawRing(0)
