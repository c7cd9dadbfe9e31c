"""The supervisor-owned channel: length-prefixed frames over a socket, tensors as raw bytes.

A frame is `MAGIC | header_len | payload_len | header JSON | payload`. The header is a JSON object;
its `tensors` list describes how the payload splits into tensors (name, dtype, shape, nbytes). No
pickle, no eval: a frame is data, and anything malformed is a `ProtocolViolation`. The channel
carries outputs and timings, never verdicts, so nothing the sandbox says can be a "PASSED".
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import time
from typing import Any

MAGIC = b"KLV1"
_PREFIX = struct.Struct("!4sII")
MAX_HEADER = 4 << 20
MAX_PAYLOAD = (4 << 30) - 1
MAX_DEPTH = 32
"""How deeply a header's JSON may nest: a reply needs 4 levels; 200,000 nested lists were a RecursionError."""

# dtype names allowed on the wire (torch attribute names)
WIRE_DTYPES = {
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int64", "int32",
    "int16", "int8", "uint8", "bool", "complex64", "complex128",
}  # fmt: skip


class ChannelError(Exception):
    """Base of channel failures."""


class ChannelClosed(ChannelError):
    """The peer closed the socket (in the sandbox's case: it died or exited)."""


class ChannelTimeout(ChannelError):
    """No complete frame arrived before the deadline."""


class ProtocolViolation(ChannelError):
    """Bytes that are not a well-formed frame, or a frame that answers nothing we asked."""


def tensor_to_bytes(tensor: Any) -> tuple[dict[str, Any], bytes]:
    """Metadata and raw little-endian bytes of a tensor (moved to CPU, made contiguous)."""
    import torch

    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in WIRE_DTYPES:
        raise ProtocolViolation(f"dtype {dtype} cannot travel on the channel")
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"dtype": dtype, "shape": list(t.shape), "nbytes": len(raw)}, raw


def tensor_from_bytes(meta: dict[str, Any], raw: bytes | memoryview) -> Any:
    """Inverse of `tensor_to_bytes`; validates dtype, shape and size against each other."""
    import torch

    dtype_name = meta.get("dtype")
    shape = meta.get("shape")
    if dtype_name not in WIRE_DTYPES or not isinstance(shape, list):
        raise ProtocolViolation(f"bad tensor metadata {meta!r:.200}")
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ProtocolViolation(f"bad tensor shape {shape!r:.200}")
    dtype = getattr(torch, dtype_name)
    count = 1
    for d in shape:
        count *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    if count * itemsize != len(raw):
        raise ProtocolViolation(f"tensor of shape {shape} {dtype_name} cannot be {len(raw)} bytes")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    return flat.view(dtype).reshape(shape)


class Channel:
    """One end of the framed channel. `send` and `recv` move (header, tensors) pairs."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        return cls(socket.socket(fileno=fd))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def send(self, header: dict[str, Any], tensors: dict[str, Any] | None = None) -> None:
        """Send one frame; tensors are listed in the header under `tensors` in payload order."""
        metas: list[dict[str, Any]] = []
        chunks: list[bytes] = []
        for name, tensor in (tensors or {}).items():
            meta, raw = tensor_to_bytes(tensor)
            metas.append({"name": name, **meta})
            chunks.append(raw)
        body = json.dumps({**header, "tensors": metas}, allow_nan=True).encode()
        payload_len = sum(len(c) for c in chunks)
        if len(body) > MAX_HEADER or payload_len > MAX_PAYLOAD:
            raise ProtocolViolation(f"frame too large (header {len(body)}, payload {payload_len})")
        self.sock.settimeout(None)
        self.sock.sendall(_PREFIX.pack(MAGIC, len(body), payload_len) + body)
        for chunk in chunks:
            self.sock.sendall(chunk)

    def recv(self, timeout_s: float | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Receive one frame; raises ChannelTimeout, ChannelClosed or ProtocolViolation."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        magic, header_len, payload_len = _PREFIX.unpack(self._read(_PREFIX.size, deadline))
        if magic != MAGIC:
            raise ProtocolViolation(f"bad frame magic {magic!r}")
        if header_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
            raise ProtocolViolation(f"oversized frame (header {header_len}, payload {payload_len})")
        try:  # the C scanner's own recursion guard turns absurd nesting into RecursionError
            header = json.loads(self._read(header_len, deadline))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ProtocolViolation(f"frame header is not JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
        if _too_deep(header, MAX_DEPTH):
            raise ProtocolViolation(f"frame header nests more than {MAX_DEPTH} levels deep")
        if not isinstance(header, dict) or not isinstance(header.get("tensors", []), list):
            raise ProtocolViolation("frame header is not a JSON object with a tensor list")
        payload = memoryview(self._read(payload_len, deadline))
        tensors: dict[str, Any] = {}
        offset = 0
        for meta in header.pop("tensors", []):
            if not isinstance(meta, dict) or not isinstance(meta.get("nbytes"), int):
                raise ProtocolViolation("bad tensor entry in frame header")
            end = offset + meta["nbytes"]
            if meta["nbytes"] < 0 or end > payload_len:
                raise ProtocolViolation("tensor sizes exceed the frame payload")
            tensors[str(meta.get("name"))] = tensor_from_bytes(meta, payload[offset:end])
            offset = end
        if offset != payload_len:
            raise ProtocolViolation("frame payload has bytes no tensor accounts for")
        return header, tensors

    def _read(self, n: int, deadline: float | None) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ChannelTimeout(f"no reply within the deadline ({len(buf)}/{n} bytes)")
                self.sock.settimeout(min(remaining, 1.0))
            else:
                self.sock.settimeout(None)
            try:
                chunk = self.sock.recv(min(n - len(buf), 1 << 22))
            except TimeoutError:
                continue
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            if not chunk:
                raise ChannelClosed("peer closed the channel")
            buf += chunk
        return bytes(buf)



def _too_deep(value: Any, limit: int) -> bool:
    """Whether lists and objects nest deeper than `limit` (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False
