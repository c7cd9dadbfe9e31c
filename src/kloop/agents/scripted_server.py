"""A scripted model server on 127.0.0.1: the only scripted part when real agent CLIs are tested.

Claude Code, Codex, Kimi Code and kloop's own `openai:` agent are real programs; what they talk
to is this server. It speaks three wire formats — Anthropic Messages (SSE, and answers HEAD the
way Claude Code probes), OpenAI Responses (SSE, what Codex uses) and Chat Completions (SSE or
plain JSON, what Kimi and OpenAI-compatible clients use) — and answers each model call with the
next scripted step: text, tool calls, or a hang (for time-limit tests).

Which step a call gets is read from the conversation it carries (the number of assistant turns
already in it), not from a counter, so client retries and side calls do not shift the script.
Bounded: loopback only, a request-size cap, a request-count cap, hangs that end when the server
stops. Every request body is kept so a test can see what the agent was told and what it tried.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_BODY = 16 * 1024 * 1024
MAX_REQUESTS = 2000
MAX_HANG_S = 900.0


class ToolCall(BaseModel):
    """One tool call the scripted model makes; `name` is the CLI's own tool name."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Tool name as the client declared it (Write, exec_command, WriteFile...).")
    args: dict[str, Any] = Field(default_factory=dict, description="The call's arguments.")


class Step(BaseModel):
    """One model turn: optional text, then optional tool calls; or a hang that never answers."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(default="", description="Assistant text of this turn.")
    calls: list[ToolCall] = Field(default_factory=list, description="Tool calls of this turn.")
    hang: bool = Field(default=False, description="Open the response and never finish it.")
    trickle: bool = Field(default=False, description="Never finish, but send a keep-alive byte every second.")


class Script(BaseModel):
    """The scripted model: steps in conversation order; past the end it says `final`."""

    steps: list[Step] = Field(default_factory=list)
    final: str = Field(default="done", description="Answer once the steps are used up.")
    input_tokens: int = Field(default=120, description="Usage reported per call (input).")
    output_tokens: int = Field(default=30, description="Usage reported per call (output).")

    @classmethod
    def load(cls, path: Path) -> Script:
        """A script file: JSON `{"steps": [...]}` or a bare JSON list of steps."""
        data = json.loads(Path(path).read_text())
        return cls(steps=data) if isinstance(data, list) else cls.model_validate(data)


def text(message: str) -> Step:
    return Step(text=message)


def call(name: str, /, **args: Any) -> Step:
    return Step(calls=[ToolCall(name=name, args=args)])


def trickle() -> Step:
    return Step(trickle=True)


def hang() -> Step:
    return Step(hang=True)


# --- which step a conversation is at ---------------------------------------------------------

def _anthropic_turn(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")


def _chat_turn(body: dict[str, Any]) -> int:
    return _anthropic_turn(body)


def _responses_turn(body: dict[str, Any]) -> int:
    """Assistant turns in a Responses input: one per run of function calls / assistant messages."""
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    turns, in_turn = 0, False
    for item in items:
        if not isinstance(item, dict):
            continue
        mine = item.get("type") in ("function_call", "custom_tool_call", "local_shell_call") or (
            item.get("type", "message") == "message" and item.get("role") == "assistant"
        )
        if mine and not in_turn:
            turns += 1
        in_turn = mine or (in_turn and item.get("type") == "reasoning")
    return turns


# --- wire formats ----------------------------------------------------------------------------

def _sse(event: str | None, data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _anthropic_message(step: Step, model: str, script: Script) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.text or not step.calls:
        content.append({"type": "text", "text": step.text})
    for c in step.calls:
        content.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": c.name, "input": c.args})
    return {
        "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": "tool_use" if step.calls else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": script.input_tokens, "output_tokens": script.output_tokens},
    }


def _anthropic_events(message: dict[str, Any]) -> list[bytes]:
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            opened = dict(block, input={})
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": opened}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def _responses_items(step: Step) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.text or not step.calls:
        items.append({"type": "message", "id": "msg_" + uuid.uuid4().hex[:20], "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": step.text, "annotations": []}]})
    for c in step.calls:
        items.append({"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:20],
                      "call_id": "call_" + uuid.uuid4().hex[:20], "name": c.name,
                      "arguments": json.dumps(c.args), "status": "completed"})
    return items


def _responses_events(step: Step, model: str, script: Script) -> list[bytes]:
    rid = "resp_" + uuid.uuid4().hex[:20]
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model}
    items = _responses_items(step)
    out = [_sse("response.created", {"type": "response.created", "response": dict(base, status="in_progress",
                                                                                   output=[])})]
    for i, item in enumerate(items):
        out.append(_sse("response.output_item.added", {"type": "response.output_item.added",
                                                        "output_index": i, "item": item}))
        if item["type"] == "message":
            out.append(_sse("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": i,
                "content_index": 0, "delta": step.text}))
        out.append(_sse("response.output_item.done", {"type": "response.output_item.done",
                                                       "output_index": i, "item": item}))
    usage = {"input_tokens": script.input_tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": script.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": script.input_tokens + script.output_tokens}
    out.append(_sse("response.completed", {"type": "response.completed", "response": dict(
        base, status="completed", output=items, usage=usage)}))
    return out


def _chat_calls(step: Step) -> list[dict[str, Any]]:
    return [{"index": i, "id": "call_" + uuid.uuid4().hex[:20], "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.args)}} for i, c in enumerate(step.calls)]


def _chat_usage(script: Script) -> dict[str, int]:
    return {"prompt_tokens": script.input_tokens, "completion_tokens": script.output_tokens,
            "total_tokens": script.input_tokens + script.output_tokens}


def _chat_completion(step: Step, model: str, script: Script) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or (None if step.calls else "")}
    if step.calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in _chat_calls(step)]
    return {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "tool_calls" if step.calls else "stop"}],
            "usage": _chat_usage(script)}


def _chat_events(step: Step, model: str, script: Script, include_usage: bool) -> list[bytes]:
    head = {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.calls:
        delta["tool_calls"] = _chat_calls(step)
    out = [_sse(None, dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))]
    out.append(_sse(None, dict(head, choices=[{"index": 0, "delta": {},
                                               "finish_reason": "tool_calls" if step.calls else "stop"}])))
    if include_usage:
        out.append(_sse(None, dict(head, choices=[], usage=_chat_usage(script))))
    out.append(_sse(None, "[DONE]"))
    return out


# --- the server ------------------------------------------------------------------------------

class Recorded(BaseModel):
    """One request the server saw."""

    method: str
    path: str
    api: str = Field(description="anthropic, responses, chat, or other.")
    body: dict[str, Any] = Field(default_factory=dict)
    step: int | None = Field(default=None, description="The script step answered, if any.")
    credential: str = Field(default="", description="The key the client sent (x-api-key or bearer token).")


def _model_of(body: dict[str, Any]) -> str:
    return str(body.get("model") or "scripted-model")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()  # headers and body go out as separate writes: no Nagle wait for the client's ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet: the record of requests is `ScriptedServer.requests`, not stderr."""

    def do_HEAD(self) -> None:
        self._record("other", {})
        self._reply(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._record("other", {})
        if self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": "scripted-model", "object": "model", "owned_by": "kloop"}]}
            return self._json(200, body)
        self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._json(413, {"error": {"message": "request too large"}})
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._json(400, {"error": {"message": "body is not JSON"}})
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            self._record("anthropic", body)
            return self._json(200, {"input_tokens": self.server.script.input_tokens})
        if path.endswith("/messages"):
            return self._answer("anthropic", body, _anthropic_turn(body))
        if path.endswith("/responses"):
            return self._answer("responses", body, _responses_turn(body))
        if path.endswith("/chat/completions"):
            return self._answer("chat", body, _chat_turn(body))
        self._record("other", body)
        self._json(404, {"error": {"message": f"no route {self.path}"}})

    def _answer(self, api: str, body: dict[str, Any], turn: int) -> None:
        script = self.server.script
        side_call = api == "anthropic" and not body.get("tools")  # Claude Code's title/quota calls
        step = Step(text=script.final) if side_call or turn >= len(script.steps) else script.steps[turn]
        if not self._record(api, body, None if side_call else turn):
            return self._json(429, {"error": {"message": "scripted server: request limit reached"}})
        if step.hang:
            return self._hang(api)
        if step.trickle:
            return self._trickle()
        model = _model_of(body)
        stream = bool(body.get("stream"))
        if api == "anthropic":
            message = _anthropic_message(step, model, script)
            return self._events(_anthropic_events(message)) if stream else self._json(200, message)
        if api == "responses":
            events = _responses_events(step, model, script)
            if stream:
                return self._events(events)
            done = json.loads(events[-1].decode().split("data: ", 1)[1])
            return self._json(200, done["response"])
        if stream:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return self._events(_chat_events(step, model, script, usage))
        self._json(200, _chat_completion(step, model, script))

    def _record(self, api: str, body: dict[str, Any], step: int | None = None) -> bool:
        with self.server.lock:
            if len(self.server.recorded) >= MAX_REQUESTS:
                return False
            auth = self.headers.get("Authorization") or ""
            credential = self.headers.get("x-api-key") or (auth[7:] if auth.lower().startswith("bearer ") else auth)
            self.server.recorded.append(Recorded(method=self.command, path=self.path, api=api,
                                                 body=body, step=step, credential=credential))
            return True

    def _reply(self, code: int, data: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, code: int, body: dict[str, Any]) -> None:
        self._reply(code, json.dumps(body).encode(), "application/json")

    def _events(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events:
            self.wfile.write(event)
            self.wfile.flush()

    def _hang(self, api: str) -> None:
        """Open a stream and send nothing more until the server stops (or MAX_HANG_S)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.flush()
        self.server.stopping.wait(MAX_HANG_S)


    def _trickle(self) -> None:
        """A JSON answer that never ends: one space (valid leading JSON whitespace) every second, so an
        idle timeout never fires; only a total deadline ends the client's wait."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        while not self.server.stopping.wait(1.0):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:  # the client closed the connection: what a deadline must do
                self.server.trickles_cut += 1
                return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.lock = threading.Lock()
        self.recorded: list[Recorded] = []
        self.stopping = threading.Event()
        self.trickles_cut = 0  # trickling answers whose client hung up


class ScriptedServer:
    """`with ScriptedServer(script) as srv:` serves on `srv.base_url` until the block ends."""

    def __init__(self, script: Script | list[Step]) -> None:
        self._server = _Server(script if isinstance(script, Script) else Script(steps=script))
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (clients add `/v1` as their API expects)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Recorded]:
        with self._server.lock:
            return list(self._server.recorded)

    @property
    def trickles_cut(self) -> int:
        """How many trickling answers the client cut (closed the connection)."""
        return self._server.trickles_cut

    def model_calls(self, api: str | None = None) -> list[Recorded]:
        """Requests that were answered with a script step (side calls and probes left out)."""
        return [r for r in self.requests if r.step is not None and (api is None or r.api == api)]

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m kloop.agents.scripted_server SCRIPT.json`: serve a script until interrupted."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m kloop.agents.scripted_server", description=main.__doc__)
    parser.add_argument("script", type=Path)
    ns = parser.parse_args(argv)
    try:
        script = Script.load(ns.script)
    except (OSError, ValueError) as exc:
        print(f"scripted_server: error: {ns.script}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    with ScriptedServer(script) as srv:
        print(srv.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
