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


# -- issue 29: replies are untrusted data ---------------------------------------------------------
def _raw_frame(body: bytes) -> bytes:
    return MAGIC + struct.pack("!II", len(body), 0) + body


@pytest.mark.parametrize("depth", [33, 1000, 200_000])
def test_deeply_nested_headers_are_protocol_violations_not_recursion_errors(pair: tuple[Channel, Channel],
                                                                            depth: int) -> None:  # fmt: skip
    left, right = pair
    import threading

    body = b'{"op": "run", "x": ' + b"[" * depth + b"]" * depth + b"}"
    sender = threading.Thread(target=left.sock.sendall, args=(_raw_frame(body),))  # larger than the socket buffer
    sender.start()
    with pytest.raises(ProtocolViolation, match="nest|not JSON"):
        right.recv(timeout_s=30)
    sender.join(10)


def test_headers_within_the_depth_bound_still_pass(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    nested: list = []
    inner = nested
    for _ in range(30):
        inner.append([])
        inner = inner[0]
    left.send({"op": "x", "deep": nested})
    header, _ = right.recv(timeout_s=5)
    assert header["deep"] == nested


@pytest.mark.parametrize(("op", "reply", "field"), [
    ("run", {"ok": True, "outputs": "all fine"}, "outputs"),
    ("run", {"ok": True, "new_threads": 7}, "new_threads"),
    ("run", {"ok": True, "elapsed_ns": "5"}, "elapsed_ns"),
    ("run", {"ok": True, "outputs": [{"index": "0", "type": "t", "exact_type": True}]}, "outputs.0.index"),
    ("load", {"ok": "yes"}, "ok"),
    ("load", {"ok": True, "destination_passing": [1]}, "destination_passing"),
    ("build", {"ok": True, "manifest": "m"}, "manifest"),
    ("batch_report", {"ok": True, "times_ns": [1.5]}, "times_ns.0"),
    ("run", {"ok": True, "error": "e" * 30_000}, "error"),
])  # fmt: skip
def test_reply_schemas_name_the_wrong_field(op: str, reply: dict, field: str) -> None:
    from kloop.verify.replies import validate

    with pytest.raises(ProtocolViolation, match=f"malformed {op} reply: {field}"):
        validate(op, reply)


def test_well_formed_replies_pass_their_schemas() -> None:
    from kloop.verify.replies import validate

    validate("run", {"ok": True, "outputs": [{"index": 0, "type": "torch.Tensor", "exact_type": True,
                                              "dtype": "float32", "shape": [8, 64]}],
                     "elapsed_ns": 5, "new_threads": [], "violations": [],
                     "nonce": "n", "op": "run"})  # fmt: skip
    validate("load", {"ok": False, "kind": "compile", "error": "boom", "filesystem": None})
    validate("hello", {"op": "hello", "pid": 1, "torch": "2.13"})
