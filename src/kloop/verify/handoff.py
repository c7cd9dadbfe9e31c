"""Timed calls handed over one at a time through memory the supervisor owns.

Issue 29: a timing batch used to travel whole inside one request, so the candidate's process held
every call's inputs before the first call started (fusing them earned 1.19x) and ran the harness
loop whose cost decided the batch's (replacing it earned 2.61x). Now:

- The supervisor creates a sealed memfd (no shrink, no grow: a candidate cannot truncate it under
  the supervisor's mapping) with one slot per call: the call's inputs, then its outputs. It passes
  the fd, the read end of a `go` pipe and the write end of a `done` pipe to the sandbox
  (SCM_RIGHTS) once per workload.
- Call i's slot is written (inputs, and poison in its outputs) only after call i-1 has answered;
  then the supervisor writes `go i` and waits for `done i`. Nothing of call i exists in the
  sandbox before its `go`, so no call can be fused with a later one or precomputed.
- At `done i` the supervisor copies the whole slot out (outputs as they are now: work finished
  later does not count) and afterwards compares each call's inputs with what it wrote (a call that
  changed its inputs is caught in timed calls too, from memory the supervisor reads itself).
- The decisive time is the box's cgroup CPU time over the batch, read by the supervisor; wall time
  is the sum of go-to-done intervals on the supervisor's clock. During a batch the supervisor's
  thread runs on the box's CPUs: the handshake is then a context switch on one core instead of a
  cross-core wake-up (~30 us of the box's CPU per call on this VM, most of it charged to the woken
  box). The handshake is a pair of pipes, not a socket: a round trip between two processes on one
  core cost the waking side 4.0-4.2 us of CPU through pipes, 6.4-7.7 us through a SEQPACKET socket
  (this 2-core Firecracker VM, plain Python, no sandbox). Each side holds only its ends, so the box
  can neither read the supervisor's `done` nor write a `go`, and its death closes `done` (EOF).

What still runs in the sandbox per call is `read go; fn(...); write done` (and, for a solution that
returns its outputs, the copy into the slot). Skipping any of it cannot make the box's CPU time
smaller than the kernel plus one hand-off. Layout code only here; no torch at import.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any

ALIGN = 64
MSG = struct.Struct("<i")
"""One handshake message: `go i` / `done i` as i >= 0, a failure in call i as -(i + 1)."""


@dataclass(frozen=True)
class Field:
    """One tensor inside a slot: where it lives and what it is."""

    name: str
    dtype: str
    shape: list[int]
    offset: int
    nbytes: int
    output: bool

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "offset": self.offset,
                "nbytes": self.nbytes, "output": self.output}  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """Slots of `count` calls: inputs (in the definition's order) then outputs, each 64-byte aligned."""

    fields: list[Field]
    slot_bytes: int
    count: int

    @property
    def input_bytes(self) -> int:
        """Bytes from a slot's start to its first output: every input (and the padding between them)."""
        outs = [f.offset for f in self.fields if f.output]
        return min(outs) if outs else self.slot_bytes

    def as_json(self) -> dict[str, Any]:
        return {"fields": [f.as_json() for f in self.fields], "slot_bytes": self.slot_bytes, "count": self.count}


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def make_layout(inputs: list[tuple[str, str, list[int], int]], outputs: list[tuple[str, str, list[int], int]],
                count: int) -> Layout:  # fmt: skip
    """(name, dtype, shape, nbytes) of each input tensor and output, and the number of slots."""
    fields: list[Field] = []
    offset = 0
    for output, specs in ((False, inputs), (True, outputs)):
        for name, dtype, shape, nbytes in specs:
            fields.append(Field(name, dtype, list(shape), offset, nbytes, output))
            offset = _align(offset + max(nbytes, 1))
    return Layout(fields, max(offset, ALIGN), max(count, 1))


def sealed_memfd(size: int) -> int:
    """A memfd of `size` bytes that nobody can shrink or grow any more (F_SEAL_SHRINK/GROW/SEAL)."""
    fd = os.memfd_create("kloop-handoff", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        raise
    return fd


class Region:
    """The supervisor's end: the memfd, its mapping and the handshake's pipes.

    `box_fds` (the memfd, `go`'s read end, `done`'s write end) are for the sandbox; `sent()` closes
    the supervisor's copies of the box's pipe ends once they are, so that the box's death reads as EOF.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.size = layout.slot_bytes * layout.count
        self.fd = sealed_memfd(self.size)
        self.map = mmap.mmap(self.fd, self.size)
        self.view = memoryview(self.map)
        go_read, self.go = os.pipe2(os.O_CLOEXEC)
        self.done, done_write = os.pipe2(os.O_CLOEXEC)
        self.box_ends = [go_read, done_write]

    @property
    def box_fds(self) -> list[int]:
        return [self.fd, *self.box_ends]

    def sent(self) -> None:
        for fd in self.box_ends:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.box_ends = []

    def close(self) -> None:
        self.view.release()
        with contextlib.suppress(BufferError):
            self.map.close()
        self.sent()
        for fd in (self.go, self.done, self.fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def pack_calls(layout: Layout, calls: list[dict[str, Any]], poison: list[float]) -> bytearray:
    """Every call's slot as bytes: its inputs, then its outputs filled with the poison pattern."""
    import torch

    buf = bytearray(layout.slot_bytes * len(calls))
    flat = torch.frombuffer(buf, dtype=torch.uint8) if buf else torch.empty(0, dtype=torch.uint8)
    for f in layout.fields:
        dtype = getattr(torch, f.dtype)
        if f.output:
            value: Any = poison[0] if dtype.is_floating_point else int(poison[1])
            if dtype == torch.bool:
                value = int(poison[1]) % 2 == 1
            raw = torch.full(f.shape, value, dtype=torch.float32 if dtype.itemsize == 1 and dtype.is_floating_point
                             else dtype).to(dtype).reshape(-1).view(torch.uint8)  # fmt: skip
        for i, call in enumerate(calls):
            start = i * layout.slot_bytes + f.offset
            if not f.output:
                raw = call[f.name].detach().contiguous().reshape(-1).view(torch.uint8)
            flat[start : start + f.nbytes] = raw
    return buf


def slot_tensor(buf: Any, layout: Layout, index: int, name: str, output: bool) -> Any:
    """The named tensor of call `index` as a fresh tensor copied out of `buf` (slot bytes)."""
    import torch

    f = next(f for f in layout.fields if f.name == name and f.output == output)
    start = index * layout.slot_bytes + f.offset
    raw = torch.frombuffer(buf, dtype=torch.uint8, count=f.nbytes, offset=start) if f.nbytes else None
    if raw is None:
        return torch.empty(f.shape, dtype=getattr(torch, f.dtype))
    return raw.clone().view(getattr(torch, f.dtype)).reshape(f.shape)


class Receiver:
    """The sandbox's end: the mapped slots as tensors, made once per workload, and the handshake.

    Views are made before any batch starts, so a batch's window holds only the hand-offs and the
    calls. They are plain tensors over the mapping; what they hold is written by the supervisor
    at each call's `go`.
    """

    def __init__(self, layout: dict[str, Any], order: list[str], scalars: dict[str, Any], fd: int,
                 go: int, done: int) -> None:  # fmt: skip
        import torch

        self.fields = [Field(**f) for f in layout["fields"]]
        self.slot_bytes, self.count = int(layout["slot_bytes"]), int(layout["count"])
        size = self.slot_bytes * self.count
        try:
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.go, self.done = go, done
        by_name = {f.name: f for f in self.fields if not f.output}
        self.ins: list[list[Any]] = []
        self.outs: list[list[Any]] = []
        for i in range(self.count):
            base = i * self.slot_bytes
            self.ins.append([self._view(torch, by_name[n], base) if n in by_name else scalars[n] for n in order])
            self.outs.append([self._view(torch, f, base) for f in self.fields if f.output])

    def _view(self, torch: Any, f: Field, base: int) -> Any:
        dtype = getattr(torch, f.dtype)
        if f.nbytes == 0:
            return torch.empty(f.shape, dtype=dtype)
        return torch.frombuffer(self.map, dtype=torch.uint8, count=f.nbytes, offset=base + f.offset).view(dtype).view(f.shape)

    def close(self) -> None:
        self.ins, self.outs = [], []
        for fd in (self.go, self.done):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(BufferError):
            self.map.close()
