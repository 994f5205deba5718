"""Named limits of signaltty (pure constants;
Spec: protocol.md §9, agents.md §7, README quality bars)."""

from typing import Final

# protocol.md §1/§9: one JSONL line in either direction.
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
# protocol.md §9: pane.input encoded data and its time budget.
MAX_INPUT_B64: Final = 1024 * 1024
INPUT_BUDGET_S: Final = 5.0
# protocol.md §9: hook payload.
MAX_HOOK_PAYLOAD: Final = 256 * 1024
# protocol.md §9: notification title / body / last_message (characters).
MAX_NOTIFICATION_TITLE: Final = 200
MAX_NOTIFICATION_BODY: Final = 2000
MAX_LAST_MESSAGE: Final = 300
NOTIFICATIONS_KEPT: Final = 200
# protocol.md §4: pane title and label, workspace name.
MAX_TITLE: Final = 200
MAX_LABEL: Final = 100
MAX_WORKSPACE_NAME: Final = 100
MAX_HANDLE: Final = 32
# protocol.md §9: pane.read lines.
READ_LINES_DEFAULT: Final = 200
READ_LINES_MAX: Final = 5000
# protocol.md §9: history per pane (rendered lines) and raw output ring (bytes).
HISTORY_LINES: Final = 5000
RAW_RING_BYTES: Final = 256 * 1024
# protocol.md §9: subscribe replay ring and per-connection queue.
EVENT_RING: Final = 4096
CONN_QUEUE_EVENTS: Final = 4096
CONN_QUEUE_BYTES: Final = 8 * 1024 * 1024
MAX_CONNECTIONS: Final = 256
# issue 10 §10 (bounded resources): all connections' outbound queues together (default of
# config ``server.outbound_total_mib``); over it the connection with the largest backlog is
# closed. Bytes handed to one connection's transport before waiting for it to drain.
OUTBOUND_TOTAL_BYTES_DEFAULT: Final = 64 * 1024 * 1024
CONN_TRANSPORT_BYTES: Final = 256 * 1024
# issue 10 §10: a connection with no complete request for this long, no subscription, no
# attachment and no call in flight is closed (default of config ``server.idle_timeout_s``).
IDLE_TIMEOUT_DEFAULT_S: Final = 30.0
MAX_LIVE_PANES: Final = 512
# protocol.md §9: waits.
WAIT_TIMEOUT_DEFAULT_S: Final = 3600.0
WAIT_OUTPUT_TIMEOUT_DEFAULT_S: Final = 30.0
WAIT_OUTPUT_TIMEOUT_MAX_S: Final = 3600.0
# issue 10 §10: a ``pane.wait_for_output`` regex: one line's search, and the matching time of
# one call (default of config ``server.wait_regex_budget_s``), which grows by this share of
# the call's elapsed time so that a long wait on a busy pane is not cut off.
WAIT_REGEX_SEARCH_S: Final = 0.05
WAIT_REGEX_BUDGET_DEFAULT_S: Final = 2.0
WAIT_REGEX_SHARE: Final = 0.05
# protocol.md §4: PTY size clamps and default.
COLS_MIN: Final = 20
COLS_MAX: Final = 500
ROWS_MIN: Final = 5
ROWS_MAX: Final = 200
COLS_DEFAULT: Final = 80
ROWS_DEFAULT: Final = 24
# agents.md §7: OSC payload cap (bytes) before the sequence is aborted.
MAX_OSC_PAYLOAD: Final = 8192
# README data flow: one PTY read, and the slice fed to the screen before yielding.
PTY_READ_BYTES: Final = 64 * 1024
SCREEN_SLICE_BYTES: Final = 16 * 1024
# README quality bar (the loop is never held for more than 50 ms): one screen-feeding step
# runs at most this long (seconds), applying pieces of this many bytes.
SCREEN_SLICE_S: Final = 0.010
SCREEN_PIECE_BYTES: Final = 2048
# desktop-and-service.md §8.1: tail file size (bytes, counting line length + 1).
TAIL_FILE_BYTES: Final = 64 * 1024
# issue 13 item 9: variables one pane.spawn/pane.split request may set (`new -e`).
MAX_REQUEST_ENV: Final = 256
