"""The program each pane of ``bench/replay.py`` runs: a recorded agent turn, at recorded speed.

``python _replay_player.py FILE PHASE GAP_MS`` writes to stdout (the pane's PTY) the chunks of
a ``bench/fixtures/replay`` recording (format in ``bench/record_turn.py``): first everything
before the turn at once (the CLI's start-up screen), then the turn's chunks with their
recorded delays, in a loop until it is killed. Each loop starts with ``GAP_MS`` of silence (a
person typing the next prompt) in place of the recorded wait before the prompt. ``PHASE`` (0 to
1) is where in the loop this copy starts, so that N copies do not print in lockstep; the chunks
before that point of the first loop are skipped. Times are kept against the monotonic clock,
so the pace does not drift with the time the writes take.

Standard library only, so that its own CPU is small and the same in every kind of pane.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import sys
import time


def main(argv: list[str]) -> int:
    path, phase, gap_ms = argv[0], float(argv[1]), float(argv[2])
    with open(path, "rb") as fh:
        doc = json.loads(gzip.decompress(fh.read()))
    chunks = [(float(ms) / 1000.0, base64.b64decode(b64)) for ms, b64 in doc["chunks"]]
    first, end = doc["turn"]
    # offsets of the turn's chunks from the start of a loop
    at, schedule = gap_ms / 1000.0, []
    for i, (delay, data) in enumerate(chunks[first:end]):
        at += delay if i else 0.0
        schedule.append((at, data))
    period = at + 0.001
    out = sys.stdout.fileno()

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]

    try:
        write(b"".join(data for _, data in chunks[:first]))
        skip = phase % 1.0 * period
        start = time.monotonic() - skip
        while True:
            for offset, data in schedule:
                if offset < skip:
                    continue
                wait = start + offset - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                write(data)
            skip = 0.0
            start += period
    except (BrokenPipeError, OSError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
