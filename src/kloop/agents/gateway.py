"""The model gateway: a loopback proxy per agent call that holds the real key and the budget.

An agent (a CLI or kloop's `openai:` agent) never gets a model key. It gets the gateway's address
and a token minted for this one call, worthless anywhere else and after the call. The gateway
checks the token, replaces it with the real key, forwards the request to the real endpoint and
streams the answer back, reading the usage the API reports (through the official SDKs' types) to
keep the call's token and dollar account. Once either budget is spent every further request is
refused with a 403 (clients do not retry it), so a writer cannot lift its own spending limit.
Every request is logged (JSONL: path, model, status, tokens, cost, duration, refusals).

Starlette + uvicorn serve; httpx2 (the SDKs' own HTTP client) forwards. Nothing here parses HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

__all__ = ["DEFAULT_PRICE", "Gateway", "Price", "Usage", "usage_of"]

MAX_BODY = 32 * 1024 * 1024
MAX_KEPT = 8 * 1024 * 1024  # bytes of an answer kept to read its usage
_DROP = {"host", "content-length", "authorization", "x-api-key", "accept-encoding", "connection", "transfer-encoding"}
_DROP_BACK = {"content-length", "content-encoding", "transfer-encoding", "connection"}


class Price(BaseModel):
    """Dollars per million tokens."""

    input: float = Field(default=3.0, description="USD per 1M input tokens (cache reads and writes included).")
    output: float = Field(default=15.0, description="USD per 1M output tokens.")

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / 1e6


DEFAULT_PRICE = Price()
"""Used when a model's price is not given: a frontier model's list price, so an unknown model's
budget binds early rather than late."""


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = Field(default=False, description="No usage in the answer: counted as bytes / 4.")

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def _tokens(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _anthropic_usage(events: list[dict[str, Any]]) -> Usage | None:
    """Usage from a Messages answer (JSON or stream), read the way the Anthropic SDK reads it (lenient
    construction: a server that leaves out an optional field still counts)."""
    from anthropic.types import Message, RawMessageDeltaEvent, RawMessageStartEvent

    def given(u: Any) -> int:
        return sum(_tokens(getattr(u, k, 0)) for k in ("input_tokens", "cache_read_input_tokens",
                                                        "cache_creation_input_tokens"))

    found: Usage | None = None
    for event in events:
        kind = event.get("type")
        if kind == "message" and isinstance(event.get("usage"), dict):
            u = Message.construct(**event).usage
            return Usage(input_tokens=given(u), output_tokens=_tokens(getattr(u, "output_tokens", 0)))
        if kind == "message_start" and isinstance(event.get("message"), dict):
            u = RawMessageStartEvent.construct(**event).message.usage
            found = Usage(input_tokens=given(u), output_tokens=_tokens(getattr(u, "output_tokens", 0)))
        elif kind == "message_delta" and found is not None and isinstance(event.get("usage"), dict):
            found.output_tokens = _tokens(getattr(RawMessageDeltaEvent.construct(**event).usage, "output_tokens", 0))
    return found


def _openai_usage(events: list[dict[str, Any]]) -> Usage | None:
    """Usage from a Chat Completions or Responses answer (the last event that carries one)."""
    from openai.types import CompletionUsage
    from openai.types.responses import ResponseUsage

    for event in reversed(events):
        body = event.get("response") if isinstance(event.get("response"), dict) else event
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            continue
        if "input_tokens" in usage:  # Responses API
            r = ResponseUsage.construct(**usage)
            return Usage(input_tokens=_tokens(r.input_tokens), output_tokens=_tokens(r.output_tokens))
        c = CompletionUsage.construct(**usage)
        return Usage(input_tokens=_tokens(c.prompt_tokens), output_tokens=_tokens(c.completion_tokens))
    return None


def _events(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The JSON objects of an answer: its body, or each server-sent event (the SDK's own decoder)."""
    if "text/event-stream" in content_type:
        from openai._streaming import SSEDecoder  # the official SDK's SSE decoder

        out = []
        for sse in SSEDecoder().iter_bytes(iter([body])):
            with contextlib.suppress(ValueError):
                data = json.loads(sse.data)
                if isinstance(data, dict):
                    out.append(data)
        return out
    with contextlib.suppress(ValueError):
        data = json.loads(body)
        if isinstance(data, dict):
            return [data]
    return []


def usage_of(body: bytes, content_type: str, request_bytes: int) -> Usage:
    """Tokens an answer says it used; when it says nothing, an estimate (4 bytes a token) that still counts."""
    events = _events(body, content_type)
    try:
        found = _anthropic_usage(events) or _openai_usage(events)
    except (TypeError, ValueError, AttributeError):  # a malformed answer: estimated below
        found = None
    if found is not None:
        return found
    return Usage(input_tokens=request_bytes // 4, output_tokens=len(body) // 4, estimated=True)


@dataclass
class _Account:
    """The call's spending, shared by the server's requests (one lock)."""

    token_limit: int | None
    usd_limit: float | None
    tokens: int = 0
    usd: float = 0.0
    requests: int = 0
    refused: int = 0
    cut: int = 0  # answers closed at the deadline
    budget_refusal: str | None = None  # why the first request refused for the budget was refused
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spent(self) -> str | None:
        if self.token_limit is not None and self.tokens >= self.token_limit:
            return f"token budget spent ({self.tokens} of {self.token_limit})"
        if self.usd_limit is not None and self.usd >= self.usd_limit:
            return f"dollar budget spent (${self.usd:.4f} of ${self.usd_limit:.4f})"
        return None


class Gateway:
    """One call's gateway; a context manager: `with Gateway(upstream, key) as gw: gw.client_url, gw.token`."""

    def __init__(self, upstream: str, key: str | None, *, token_limit: int | None = None,
                 usd_limit: float | None = None, price: Price | None = None, log_path: Path | None = None,
                 deadline_s: float | None = None, uds: Path | None = None) -> None:  # fmt: skip
        parts = urlsplit(upstream.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"gateway: upstream {upstream!r} is not an http(s) URL")
        self.origin, self.prefix = f"{parts.scheme}://{parts.netloc}", parts.path
        self._key = key
        self.token = "kloop-gw-" + secrets.token_urlsafe(24)
        self.account = _Account(token_limit, usd_limit)
        self.price = price or DEFAULT_PRICE
        self.log_path = log_path
        self.uds = uds
        self._deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self._server: Any = None
        self._http: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- life cycle ----------------------------------------------------------------------------
    def __enter__(self) -> Gateway:
        import uvicorn

        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off", access_log=False,
                                timeout_graceful_shutdown=1)  # fmt: skip
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP; with proto 0 every
        # keep-alive answer waited ~40 ms for the client's delayed ACK (Nagle; bench/gateway_latency.py)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        tcp.bind(("127.0.0.1", 0))
        self.port = tcp.getsockname()[1]
        listening = [tcp]
        if self.uds is not None:  # the way in from an agent's own network namespace (a relay connects here)
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(str(self.uds))
            listening.append(unix)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": listening}, name="kloop-gateway",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("gateway: the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(10)

    @property
    def client_url(self) -> str:
        """The base URL an agent is given: the gateway with the upstream's path (e.g. `/v1`)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    # -- the app -------------------------------------------------------------------------------
    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST", "HEAD"])])

    def _authorized(self, request: Any) -> bool:
        given = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            given = given or auth[7:].strip()
        return secrets.compare_digest(given.encode(), self.token.encode())

    async def _handle(self, request: Any) -> Any:
        from starlette.responses import JSONResponse, Response

        started = time.monotonic()
        path = request.url.path
        if request.method == "HEAD":  # Claude Code's reachability probe: answered here, never forwarded
            return Response(status_code=200)
        if not self._authorized(request):
            self._log(path=path, status=401, refused="bad token")
            return JSONResponse({"error": {"type": "authentication_error", "message": "kloop gateway: bad token"}},
                                status_code=401)  # fmt: skip
        with self.account.lock:
            spent = self.account.spent()
            if spent is not None and self.account.budget_refusal is None:
                self.account.budget_refusal = spent
            if spent is None and self._deadline is not None and time.monotonic() >= self._deadline:
                spent = "the call's deadline has passed"
            if spent is not None:
                self.account.refused += 1
        if spent is not None:
            self._log(path=path, status=403, refused=spent)
            return JSONResponse({"type": "error", "error": {"type": "permission_error",
                                                            "message": f"kloop gateway: {spent}"}}, status_code=403)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": {"message": "kloop gateway: request too large"}}, status_code=413)
        return await self._forward(request, path, body, started)

    async def _forward(self, request: Any, path: str, body: bytes, started: float) -> Any:
        from starlette.responses import JSONResponse, StreamingResponse

        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        if self._key:
            if "x-api-key" in request.headers:
                headers["x-api-key"] = self._key
            else:
                headers["authorization"] = f"Bearer {self._key}"
        url = self.origin + path + (f"?{request.url.query}" if request.url.query else "")
        if self._http is None:  # made on the server's own event loop, at its first request
            import httpx2

            nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]  # no Nagle wait between headers and body
            self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(600.0, connect=30.0), follow_redirects=False,
                                            transport=httpx2.AsyncHTTPTransport(socket_options=nodelay))
        upstream = self._http.build_request(request.method, url, headers=headers, content=body)
        model = _model_of(body)
        try:
            async with asyncio.timeout(self._left()):
                answer = await self._http.send(upstream, stream=True)
        except TimeoutError:
            self._cut(path, model)
            return JSONResponse({"error": {"message": "kloop gateway: the call's deadline passed"}}, status_code=504)
        kept = bytearray()
        ctype = answer.headers.get("content-type", "")

        async def relay() -> AsyncIterator[bytes]:
            try:  # a total deadline: keep-alive bytes from upstream cannot extend it
                async with asyncio.timeout(self._left()):
                    async for chunk in answer.aiter_raw():
                        if len(kept) < MAX_KEPT:
                            kept.extend(chunk)
                        yield chunk
            except TimeoutError:
                self._cut(path, model)
                raise  # the client's connection is closed mid-answer: its read ends now
            finally:
                await answer.aclose()
                self._settle(path, model, answer.status_code, bytes(kept), ctype, len(body), started)

        back = {k: v for k, v in answer.headers.items() if k.lower() not in _DROP_BACK}
        return StreamingResponse(relay(), status_code=answer.status_code, headers=back)

    def _left(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def _cut(self, path: str, model: str | None) -> None:
        with self.account.lock:
            self.account.cut += 1
        self._log(path=path, model=model, status=504, refused="cut at the call's deadline")

    def _settle(self, path: str, model: str | None, status: int, body: bytes, ctype: str, sent: int,
                started: float) -> None:  # fmt: skip
        usage = usage_of(body, ctype, sent) if status < 400 else Usage()
        cost = self.price.cost(usage)
        with self.account.lock:
            self.account.tokens += usage.total
            self.account.usd += cost
            self.account.requests += 1
        self._log(path=path, model=model, status=status, input_tokens=usage.input_tokens,
                  output_tokens=usage.output_tokens, estimated=usage.estimated, usd=round(cost, 6),
                  seconds=round(time.monotonic() - started, 4))  # fmt: skip

    def _log(self, **entry: Any) -> None:
        if self.log_path is None:
            return
        entry = {"t": round(time.time(), 3), **entry}
        with contextlib.suppress(OSError), self.log_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    # -- what the call spent -------------------------------------------------------------------
    @property
    def tokens(self) -> int:
        return self.account.tokens

    @property
    def usd(self) -> float:
        return self.account.usd


def _model_of(body: bytes) -> str | None:
    with contextlib.suppress(ValueError, AttributeError):
        model = json.loads(body).get("model")
        return model if isinstance(model, str) else None
    return None
