"""Named limits of signaltty (pure constants; Spec: protocol.md §9, agents.md §7, README quality bars)."""

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
MAX_LIVE_PANES: Final = 512
# protocol.md §9: waits.
WAIT_TIMEOUT_DEFAULT_S: Final = 3600.0
WAIT_OUTPUT_TIMEOUT_DEFAULT_S: Final = 30.0
WAIT_OUTPUT_TIMEOUT_MAX_S: Final = 3600.0
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
# desktop-and-service.md §8.1: tail file size (bytes, counting line length + 1).
TAIL_FILE_BYTES: Final = 64 * 1024
