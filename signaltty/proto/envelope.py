"""Request/response/event envelopes and the protocol error type (stdlib only;
Spec: protocol.md §2, §8).

Pure: encodes and decodes dicts and bytes; the listener and the clients do the I/O.
"""

from __future__ import annotations

import json

from signaltty.proto.constants import PROTOCOL

# ``typing`` costs ~6 ms to import, which every agent hook would pay (README "Dependency
# rules"); annotations are strings here (PEP 563), so the names are only needed by checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class SignalttyError(Exception):
    """A protocol error with a wire code (protocol.md §8).

    Args:
        code: one of ``constants.CODES``.
        message: human-readable text, sent as ``error.message``.
        details: optional JSON-able dict sent as ``error.details``.
    """

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details

    def to_wire(self) -> dict[str, Any]:
        """Return the ``error`` object of a response envelope."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            err["details"] = self.details
        return err


def error_from_wire(error: dict[str, Any]) -> SignalttyError:
    """Rebuild a ``SignalttyError`` from a response's ``error`` object (unknown codes kept as
    is)."""
    return SignalttyError(
        str(error.get("code", "INTERNAL")),
        str(error.get("message", "")),
        error.get("details") if isinstance(error.get("details"), dict) else None,
    )


def request(req_id: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Build a request envelope."""
    return {"protocol": PROTOCOL, "id": req_id, "method": method, "params": params or {}}


def ok(req_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Build a success response envelope."""
    return {"protocol": PROTOCOL, "id": req_id, "ok": True, "result": result}


def fail(req_id: str, err: SignalttyError) -> dict[str, Any]:
    """Build an error response envelope."""
    return {"protocol": PROTOCOL, "id": req_id, "ok": False, "error": err.to_wire()}


def event(name: str, payload: dict[str, Any], seq: int | None) -> dict[str, Any]:
    """Build an event envelope; ``seq`` is None only for ``pty.data`` (protocol.md §2)."""
    env: dict[str, Any] = {"protocol": PROTOCOL, "type": "event", "event": name}
    if seq is not None:
        env["seq"] = seq
    env["payload"] = payload
    return env


def encode(obj: dict[str, Any]) -> bytes:
    """Serialize one envelope as a JSONL line (compact, UTF-8, ``\\n``-terminated)."""
    # "replace": a lone surrogate (from a client's id, a restored name) must not make an
    # answer unsendable.
    return (
        json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")
        + b"\n"
    )


def decode_request(line: bytes) -> tuple[str, str, dict[str, Any]]:
    """Parse one request line.

    Args:
        line: one line without its ``\\n`` (a trailing ``\\r`` is tolerated).

    Returns:
        ``(id, method, params)``; absent or null params become ``{}``.

    Raises:
        SignalttyError: ``BAD_PARAMS`` "invalid JSON" (with ``id`` "?"), ``BAD_PROTOCOL``,
            ``BAD_PARAMS`` for a non-string method/id or non-object params. The error's
            ``details["id"]`` carries the request id when it could be read.
    """
    if line.endswith(b"\r"):
        line = line[:-1]
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise SignalttyError("BAD_PARAMS", "invalid JSON") from None
    if not isinstance(obj, dict):
        raise SignalttyError("BAD_PARAMS", "invalid JSON")
    raw_id = obj.get("id")
    req_id = raw_id if isinstance(raw_id, str) else "?"
    if obj.get("protocol") != PROTOCOL:
        raise _with_id(SignalttyError("BAD_PROTOCOL", f"expected protocol {PROTOCOL}"), req_id)
    if not isinstance(raw_id, str):
        raise _with_id(SignalttyError("BAD_PARAMS", "id must be a string", {"field": "id"}), "?")
    method = obj.get("method")
    if not isinstance(method, str):
        raise _with_id(
            SignalttyError("BAD_PARAMS", "method must be a string", {"field": "method"}), req_id
        )
    params = obj.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _with_id(
            SignalttyError("BAD_PARAMS", "params must be an object", {"field": "params"}), req_id
        )
    return req_id, method, params


def _with_id(err: SignalttyError, req_id: str) -> SignalttyError:
    err.request_id = req_id  # type: ignore[attr-defined]
    return err


def request_id_of(err: SignalttyError) -> str:
    """The request id an envelope error belongs to, ``"?"`` when unreadable."""
    return getattr(err, "request_id", "?")
