"""The channel over a real socketpair: round trips, and refusing anything that is not a frame."""

from __future__ import annotations

import json
import socket
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kloop.verify.channel import MAGIC, Channel, ChannelClosed, ChannelTimeout, ProtocolViolation


@pytest.fixture()
def pair() -> tuple[Channel, Channel]:
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    yield left, right
    left.close()
    right.close()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.int8, torch.bool, torch.float8_e4m3fn])  # fmt: skip
def test_tensors_round_trip_bit_exact(pair: tuple[Channel, Channel], dtype: torch.dtype) -> None:
    left, right = pair
    source = torch.randn(3, 5).mul(4).to(dtype)
    empty = torch.empty(0, 7, dtype=dtype)
    left.send({"op": "x", "n": 1}, {"a": source, "b": empty, "t": source.t()})
    header, tensors = right.recv(timeout_s=5)
    assert header == {"op": "x", "n": 1}
    assert tensors["a"].dtype == dtype and torch.equal(tensors["a"].view(torch.uint8), source.view(torch.uint8))
    assert tensors["b"].shape == (0, 7)
    assert torch.equal(tensors["t"].view(torch.uint8), source.t().contiguous().view(torch.uint8))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), min_size=0, max_size=3))
def test_any_shape_round_trips(shape: list[int]) -> None:
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    try:
        tensor = torch.arange(int(torch.tensor(shape).prod()) if shape else 1, dtype=torch.float32).reshape(shape)
        left.send({"op": "s"}, {"v": tensor})
        _, got = right.recv(timeout_s=5)
        assert torch.equal(got["v"], tensor)
    finally:
        left.close()
        right.close()


def _raw(header: dict, payload: bytes = b"", magic: bytes = MAGIC) -> bytes:
    body = json.dumps(header).encode()
    return struct.pack("!4sII", magic, len(body), len(payload)) + body + payload


@pytest.mark.parametrize(
    "frame",
    [
        b"PASSED\n" + b"\0" * 16,  # a forged verdict printed into the channel
        _raw({"ok": True}, magic=b"KLV0"),
        struct.pack("!4sII", MAGIC, 5, 0) + b"nope!",  # header is not JSON
        _raw({"tensors": [{"name": "y", "dtype": "float32", "shape": [2], "nbytes": 8}]}, b"\0" * 4),  # short
        _raw({"tensors": [{"name": "y", "dtype": "float32", "shape": [3], "nbytes": 8}]}, b"\0" * 8),  # 3*4 != 8
        _raw({"tensors": [{"name": "y", "dtype": "object", "shape": [1], "nbytes": 8}]}, b"\0" * 8),
        _raw({"tensors": []}, b"\0" * 8),  # payload nobody accounts for
        _raw(["not", "an", "object"]),  # type: ignore[arg-type]
    ],
)
def test_malformed_frames_are_protocol_violations(pair: tuple[Channel, Channel], frame: bytes) -> None:
    left, right = pair
    left.sock.sendall(frame)
    with pytest.raises(ProtocolViolation):
        right.recv(timeout_s=5)


def test_oversized_header_is_refused_before_reading(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    left.sock.sendall(struct.pack("!4sII", MAGIC, 1 << 30, 0))
    with pytest.raises(ProtocolViolation):
        right.recv(timeout_s=5)


def test_timeout_and_close_are_distinct(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    with pytest.raises(ChannelTimeout):
        right.recv(timeout_s=0.2)
    left.sock.sendall(MAGIC)  # half a prefix, then the peer goes away
    left.close()
    with pytest.raises(ChannelClosed):
        right.recv(timeout_s=5)
