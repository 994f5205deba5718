"""A scripted model server on 127.0.0.1 for the real-agent tier (no real model is reached).

It speaks, as the real CLIs call them:

* Anthropic Messages: ``POST /v1/messages`` (SSE or JSON) and ``…/count_tokens`` (Claude Code);
* OpenAI Responses: ``POST /v1/responses`` (SSE) (Codex);
* OpenAI chat completions: ``POST /v1/chat/completions`` (SSE or JSON) (OpenCode, Pi);
* Gemini: ``POST /v1beta/models/M:streamGenerateContent?alt=sse``, ``:generateContent``,
  ``:countTokens`` (Gemini CLI);
* ``GET …/models`` for every family.

The script is chosen by a token in the **last user text** of the conversation (never by the
system prompt, titles or tool results):

* ``hello-T`` answers ``Reply T ready.`` after :data:`HELLO_SECONDS`;
* ``slow-T`` holds the stream open :data:`SLOW_SECONDS` (keep-alives only), then answers
  ``Slow reply T. Finished T.``;
* ``perm-T`` asks for the shell tool to run ``touch marker-T.txt && echo hi`` (a write, so
  every agent asks permission) and, once the result of that call (id :func:`call_id`) is in
  the conversation, answers ``Tool turn T over.`` at once, whatever the result was (ran,
  denied or failed).

Side requests (a title, a JSON classification: no tools offered or a JSON output format) get
an immediate schema-shaped answer and never a tool call. Anything else gets
``Nothing scripted.``.

The request log (:attr:`FakeModel.requests`) says which path/script each request got, for
failure messages. Run it alone with ``python fake_model.py [PORT]`` to point a CLI at it.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_SECONDS = 8.0
HELLO_SECONDS = 1.5
KEEPALIVE_S = 0.5
TOKEN_RE = re.compile(r"\b(hello|slow|perm)-([a-z0-9]{1,16})\b")
SHELL_TOOLS = ("Bash", "bash", "exec_command", "shell", "run_shell_command")
MAX_BODY = 64 * 1024 * 1024


def marker_name(token: str) -> str:
    """The file the ``perm-<token>`` script's command creates in the agent's cwd."""
    return f"marker-{token}.txt"


class Plan:
    """What to answer: ``text`` chunks after ``delay`` seconds of an open, silent stream
    (keep-alives only: the agent shows its "working" indicator), and maybe one tool call."""

    def __init__(self, chunks: list[str], delay: float = 0.0, command: str | None = None) -> None:
        self.chunks = chunks
        self.delay = delay
        self.command = command

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def plan_for(user_text: str | None, after_tool: bool, side: bool) -> tuple[str, Plan]:
    """The script for one request → ``(label, plan)``; ``label`` goes to the request log."""
    if side:
        return "side", Plan(["Test session"])
    found = TOKEN_RE.findall(user_text or "")
    if not found:
        return "none", Plan(["Nothing scripted."])
    kind, token = found[-1]
    if kind == "hello":
        # a model takes a moment: a sub-second turn would be a race with the 500 ms screen sweep
        return f"hello-{token}", Plan([f"Reply {token} ready."], delay=HELLO_SECONDS)
    if kind == "slow":
        return f"slow-{token}", Plan([f"Slow reply {token}.", f" Finished {token}."], delay=SLOW_SECONDS)
    if after_tool:
        return f"perm-{token}:result", Plan([f"Tool turn {token} over."])
    return f"perm-{token}:call", Plan(["Running a command."], command=f"touch {marker_name(token)} && echo hi")


def call_id(token: str) -> str:
    """The tool call id of ``perm-<token>``: its result is recognised by this id alone, because
    Claude Code merges adjacent messages (a tool result and the next prompt share a message)."""
    return f"toolu_perm_{token}"


def _token(user_text: str | None) -> str | None:
    found = TOKEN_RE.findall(user_text or "")
    return found[-1][1] if found else None


def _schema_value(schema: Any, depth: int = 0) -> Any:
    """A value matching a JSON schema well enough for the CLIs' side classifiers."""
    if not isinstance(schema, dict) or depth > 6:
        return "Test session"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "user" if "user" in enum else enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = str(kind).lower() if kind else ("object" if "properties" in schema else "string")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _schema_value(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("number", "integer"):
        return 0
    return "Test session"


def _tool_args(params: Any, command: str) -> dict[str, Any]:
    """Arguments for the agent's own shell tool, filled from its declared parameters."""
    props = params.get("properties", {}) if isinstance(params, dict) else {}
    args: dict[str, Any] = {}
    for key, spec in props.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if key in ("command", "cmd"):
            args[key] = ["bash", "-lc", command] if kind == "array" else command
        elif key == "description":
            args[key] = "Create a marker file"
        elif key == "justification":
            args[key] = "The test needs a marker file"
        elif key == "sandbox_permissions":
            # Codex asks for approval only for a command that leaves its sandbox
            args[key] = "require_escalated"
    if not args:
        args["command"] = command
    return args


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


class FakeModel:
    """The server: ``start()`` binds 127.0.0.1 on a free port, ``stop()`` shuts it down."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(_Handler):
            owner = model

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeModel:
        self._thread = threading.Thread(target=self.server.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def summary(self, last: int = 12) -> str:
        with self._lock:
            rows = self.requests[-last:]
        return "\n".join(f"  {r['path']} → {r['script']}" for r in rows) or "  (no request)"


class _Handler(BaseHTTPRequestHandler):
    owner: FakeModel
    server_version = "fake-model/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    # ------------------------------------------------------------------ plumbing

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            raise ValueError("bad length")
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw or b"{}")
        if not isinstance(body, dict):
            raise ValueError("body is not an object")
        return body

    def _json(self, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

    def _send(self, chunk: bytes) -> None:
        self.wfile.write(chunk)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0]
        self.owner.log({"path": f"GET {path}", "script": "models"})
        if path.endswith("/models"):
            if "/v1beta/" in path:
                self._json(200, {"models": [{"name": "models/gemini-2.5-flash", "supportedGenerationMethods": ["generateContent"]}]})
            else:
                self._json(200, {"object": "list", "data": [{"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}]})
            return
        self._json(404, {"error": {"message": "not scripted"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0]
        try:
            body = self._body()
        except (ValueError, UnicodeDecodeError):
            self._json(400, {"error": {"message": "bad request body"}})
            return
        try:
            if path.endswith("/count_tokens"):
                self._json(200, {"input_tokens": 10})
            elif path.endswith("/messages"):
                self._anthropic(path, body)
            elif path.endswith("/responses"):
                self._responses(path, body)
            elif path.endswith("/chat/completions"):
                self._chat(path, body)
            elif ":countTokens" in path:
                self._json(200, {"totalTokens": 10})
            elif ":streamGenerateContent" in path or ":generateContent" in path:
                self._gemini(path, body)
            else:
                self.owner.log({"path": f"POST {path}", "script": "404"})
                self._json(404, {"error": {"message": "not scripted"}})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent hung up (Esc): nothing to finish

    def _wait(self, plan: Plan, keepalive: Any = None) -> None:
        """Hold the open stream for ``plan.delay`` s, sending ``keepalive()`` (or an SSE comment)."""
        end = time.monotonic() + plan.delay
        while time.monotonic() < end:
            time.sleep(min(KEEPALIVE_S, max(0.0, end - time.monotonic())))
            if keepalive is not None:
                keepalive()
            else:
                self._send(b": keep-alive\n\n")

    def _stream_text(self, plan: Plan, emit: Any, keepalive: Any = None) -> None:
        """Wait ``plan.delay`` s, then call ``emit(chunk)`` per text chunk."""
        self._wait(plan, keepalive)
        for chunk in plan.chunks:
            emit(chunk)

    # ------------------------------------------------------------------ Anthropic Messages

    def _anthropic(self, path: str, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        user_text, results = None, set()
        for msg in messages:
            if not isinstance(msg, dict) or msg.get("role") != "user":
                continue
            content = msg.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and TOKEN_RE.search(b.get("text") or ""):
                    user_text = b["text"]
                elif b.get("type") == "tool_result":
                    results.add(b.get("tool_use_id"))
        after_tool = call_id(_token(user_text) or "") in results
        fmt = (body.get("output_config") or {}).get("format") if isinstance(body.get("output_config"), dict) else None
        side = not body.get("tools") or bool(fmt)
        label, plan = plan_for(user_text, after_tool, side)
        self.owner.log({"path": f"POST {path}", "script": label})
        if side and isinstance(fmt, dict):
            plan = Plan([json.dumps(_schema_value(fmt.get("schema")))])
        tool = next((t for t in body.get("tools") or [] if t.get("name") in SHELL_TOOLS), None)
        model = body.get("model", "mock-model")
        use_tool = plan.command is not None and tool is not None
        stop = "tool_use" if use_tool else "end_turn"
        tool_input = _tool_args(tool.get("input_schema"), plan.command) if use_tool else None
        if not body.get("stream"):
            content: list[dict[str, Any]] = [{"type": "text", "text": plan.text}]
            if use_tool:
                content.append({"type": "tool_use", "id": call_id(_token(user_text) or ""), "name": tool["name"],
                                "input": tool_input})
            self._json(200, {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                             "content": content, "stop_reason": stop, "stop_sequence": None,
                             "usage": {"input_tokens": 10, "output_tokens": 5}})
            return
        self._start_sse()
        self._send(_sse("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}))
        self._send(_sse("ping", {"type": "ping"}))
        self._send(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}))
        self._stream_text(plan, lambda chunk: self._send(_sse("content_block_delta", {
            "type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}})),
            lambda: self._send(_sse("ping", {"type": "ping"})))
        self._send(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        if use_tool:
            self._send(_sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                "type": "tool_use", "id": call_id(_token(user_text) or ""), "name": tool["name"], "input": {}}}))
            self._send(_sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(tool_input)}}))
            self._send(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
        self._send(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                          "usage": {"output_tokens": 5}}))
        self._send(_sse("message_stop", {"type": "message_stop"}))

    # ------------------------------------------------------------------ OpenAI Responses

    def _responses(self, path: str, body: dict[str, Any]) -> None:
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        user_text, results = None, set()
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output":
                results.add(item.get("call_id"))
            if item.get("role") != "user":
                continue
            content = item.get("content")
            parts = [{"text": content}] if isinstance(content, str) else content or []
            texts = [p.get("text", "") for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
            if any(TOKEN_RE.search(t) for t in texts):
                user_text = "\n".join(texts)
        after_tool = call_id(_token(user_text) or "") in results
        fmt = ((body.get("text") or {}).get("format") or {}) if isinstance(body.get("text"), dict) else {}
        side = not body.get("tools") or fmt.get("type") == "json_schema"
        label, plan = plan_for(user_text, after_tool, side)
        self.owner.log({"path": f"POST {path}", "script": label})
        if side and fmt.get("type") == "json_schema":
            plan = Plan([json.dumps(_schema_value(fmt.get("schema")))])
        tool = next((t for t in body.get("tools") or [] if t.get("name") in SHELL_TOOLS), None)
        use_tool = plan.command is not None and tool is not None
        self._start_sse()
        seq = iter(range(1, 10_000))

        def ev(kind: str, **fields: Any) -> None:
            self._send(_sse(kind, {"type": kind, "sequence_number": next(seq), **fields}))

        resp = {"id": "resp_fake", "object": "response", "created_at": int(time.time()), "status": "in_progress",
                "model": body.get("model", "mock-model"), "output": []}
        ev("response.created", response=resp)
        ev("response.in_progress", response=resp)
        msg = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []}
        ev("response.output_item.added", output_index=0, item=msg)
        ev("response.content_part.added", item_id="msg_fake", output_index=0, content_index=0,
           part={"type": "output_text", "text": "", "annotations": []})
        self._stream_text(plan, lambda chunk: ev("response.output_text.delta", item_id="msg_fake", output_index=0,
                                                 content_index=0, delta=chunk))
        ev("response.output_text.done", item_id="msg_fake", output_index=0, content_index=0, text=plan.text)
        part = {"type": "output_text", "text": plan.text, "annotations": []}
        ev("response.content_part.done", item_id="msg_fake", output_index=0, content_index=0, part=part)
        done_msg = {**msg, "status": "completed", "content": [part]}
        ev("response.output_item.done", output_index=0, item=done_msg)
        output = [done_msg]
        if use_tool:
            call = {"type": "function_call", "id": "fc_fake", "call_id": call_id(_token(user_text) or ""),
                    "name": tool["name"], "arguments": json.dumps(_tool_args(tool.get("parameters"), plan.command)),
                    "status": "completed"}
            ev("response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "in_progress"})
            ev("response.output_item.done", output_index=1, item=call)
            output.append(call)
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        ev("response.completed", response={**resp, "status": "completed", "output": output, "usage": usage})

    # ------------------------------------------------------------------ chat completions

    def _chat(self, path: str, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        user_text, results = None, set()
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") == "tool":
                results.add(msg.get("tool_call_id"))
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            parts = [{"text": content}] if isinstance(content, str) else content or []
            texts = [p.get("text", "") for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
            if any(TOKEN_RE.search(t) for t in texts):
                user_text = "\n".join(texts)
        after_tool = call_id(_token(user_text) or "") in results
        rf = body.get("response_format") if isinstance(body.get("response_format"), dict) else {}
        side = not body.get("tools") or rf.get("type") in ("json_schema", "json_object")
        label, plan = plan_for(user_text, after_tool, side)
        self.owner.log({"path": f"POST {path}", "script": label})
        if side and rf.get("type") == "json_schema":
            plan = Plan([json.dumps(_schema_value((rf.get("json_schema") or {}).get("schema")))])
        tool = next((t.get("function") for t in body.get("tools") or []
                     if isinstance(t.get("function"), dict) and t["function"].get("name") in SHELL_TOOLS), None)
        use_tool = plan.command is not None and tool is not None
        args = json.dumps(_tool_args(tool.get("parameters"), plan.command)) if use_tool else None
        cid = call_id(_token(user_text) or "")
        finish = "tool_calls" if use_tool else "stop"
        model = body.get("model", "mock-model")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": plan.text}
            if use_tool:
                message["tool_calls"] = [{"id": cid, "type": "function",
                                          "function": {"name": tool["name"], "arguments": args}}]
            self._json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                             "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
            return
        self._start_sse()

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            self._send(_sse(None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}))

        chunk({"role": "assistant", "content": ""})
        self._stream_text(plan, lambda text: chunk({"content": text}))
        if use_tool:
            chunk({"tool_calls": [{"index": 0, "id": cid, "type": "function",
                                   "function": {"name": tool["name"], "arguments": args}}]})
        chunk({}, finish)
        self._send(_sse(None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                               "model": model, "choices": [],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))
        self._send(_sse(None, "[DONE]"))

    # ------------------------------------------------------------------ Gemini

    def _gemini(self, path: str, body: dict[str, Any]) -> None:
        contents = body.get("contents") or []
        user_text, after_tool = None, False
        for content in reversed(contents):
            if not isinstance(content, dict) or content.get("role", "user") != "user":
                continue
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            if any("functionResponse" in p for p in parts):
                after_tool = True
            texts = [p.get("text", "") for p in parts if isinstance(p.get("text"), str)]
            if any(TOKEN_RE.search(t) for t in texts):
                user_text = "\n".join(texts)
                break
        gen = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
        json_mode = gen.get("responseMimeType") == "application/json"
        decls = [d for t in body.get("tools") or [] if isinstance(t, dict)
                 for d in t.get("functionDeclarations") or [] if isinstance(d, dict)]
        side = not decls or json_mode
        label, plan = plan_for(user_text, after_tool, side)
        self.owner.log({"path": f"POST {path}", "script": label})
        if json_mode:
            plan = Plan([json.dumps(_schema_value(gen.get("responseJsonSchema") or gen.get("responseSchema")))])
        tool = next((d for d in decls if d.get("name") in SHELL_TOOLS), None)
        use_tool = plan.command is not None and tool is not None
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}

        def candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
            cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            out: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-2.5-flash"}
            if finish:
                out["usageMetadata"] = usage
            return out

        tail: list[dict[str, Any]] = []
        if use_tool:
            params = tool.get("parametersJsonSchema") or tool.get("parameters")
            tail = [{"functionCall": {"name": tool["name"], "args": _tool_args(params, plan.command)}}]
        if ":generateContent" in path:
            self._json(200, candidate([{"text": plan.text}, *tail], "STOP"))
            return
        self._start_sse()
        self._wait(plan, lambda: None)  # Gemini CLI's stream parser stalls on SSE comments
        chunks = plan.chunks
        for i, text in enumerate(chunks):
            last = i == len(chunks) - 1
            self._send(_sse(None, candidate([{"text": text}, *(tail if last else [])], "STOP" if last else None)))


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    fake = FakeModel(port)
    print(fake.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person stops it by hand
        fake.server.serve_forever()


if __name__ == "__main__":
    main()
