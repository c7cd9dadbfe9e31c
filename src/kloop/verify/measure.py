"""Facts a verdict rests on, measured by the supervisor from memory and kernel interfaces (issue 29).

The sandbox's own reply used to carry the input digests and its live threads; a candidate that
patched the harness forged both (and passed). Now:
- `SharedInputs`: a correctness call's inputs live in a sealed memfd the supervisor created and
  maps too. The sandbox copies its staged inputs into it before each call and hands the call
  views of it; after the reply the supervisor hashes that memory itself. A call that changed its
  inputs is caught whatever the reply says. (On a GPU the harness copies the device inputs back
  into it after the call: there the copy-back runs in the candidate's process.)
- `box_threads`: every thread of every process in the box, from the box's cgroup (`tasks`), or
  from /proc where there is no cgroup. Those that were not there before the candidate's code
  loaded and are still there after a call returned are background threads or processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
import time
from pathlib import Path
from typing import Any

ALIGN = 64
SETTLE_S = 0.001
"""How long a thread that was joined may take to leave the kernel's lists before it counts (a thread
doing deferred work for longer is caught; shorter deferred work cannot touch a reply already sent)."""


class SharedInputs:
    """One workload's staged inputs, laid out back to back in a sealed memfd both sides map."""

    def __init__(self, tensors: dict[str, Any]) -> None:
        from kloop.verify.channel import tensor_to_bytes

        self.layout: list[dict[str, Any]] = []
        chunks: list[tuple[int, bytes]] = []
        offset = 0
        for name, tensor in tensors.items():
            meta, raw = tensor_to_bytes(tensor)
            self.layout.append({"name": name, "offset": offset, **meta})
            chunks.append((offset, raw))
            offset += (len(raw) + ALIGN - 1) // ALIGN * ALIGN
        self.size = max(offset, ALIGN)
        self.expected = {e["name"]: hashlib.sha256(raw).hexdigest() for e, (_, raw) in zip(self.layout, chunks, strict=True)}
        self.fd = os.memfd_create("kloop-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.size)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.map = mmap.mmap(self.fd, self.size)
        for start, raw in chunks:
            self.map[start : start + len(raw)] = raw

    def digests(self) -> dict[str, str]:
        """sha256 of every input as the call left it, read from the supervisor's own mapping."""
        return {e["name"]: hashlib.sha256(self.map[e["offset"] : e["offset"] + e["nbytes"]]).hexdigest()
                for e in self.layout}  # fmt: skip

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def views(fd: int, layout: list[dict[str, Any]]) -> tuple[mmap.mmap, dict[str, Any]]:
    """The sandbox's side: map the memfd and make one tensor per input over it (no copies)."""
    import torch

    size = os.fstat(fd).st_size
    shared = mmap.mmap(fd, size)
    out: dict[str, Any] = {}
    for entry in layout:
        dtype = getattr(torch, entry["dtype"])
        if entry["nbytes"] == 0:
            out[entry["name"]] = torch.empty(entry["shape"], dtype=dtype)
            continue
        flat = torch.frombuffer(shared, dtype=torch.uint8, count=entry["nbytes"], offset=entry["offset"])
        out[entry["name"]] = flat.view(dtype).reshape(entry["shape"])
    return shared, out


def _tids_of(tasks_file: Path | None, root_pid: int | None) -> set[int]:
    if tasks_file is not None:
        with contextlib.suppress(OSError, ValueError):
            return {int(t) for t in tasks_file.read_text().split()}
    if root_pid is None:
        return set()
    import psutil

    tids: set[int] = set()
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(root_pid)
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                tids.update(t.id for t in proc.threads())
    return tids


def _alive(tid: int) -> bool:
    try:
        stat = Path(f"/proc/{tid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :][:1] not in ("Z", "X")


def _comm(tid: int) -> str:
    try:
        return Path(f"/proc/{tid}/comm").read_text().strip()
    except OSError:
        return "?"


def box_threads(tasks_file: Path | None, root_pid: int | None) -> set[int]:
    """Every live thread (host tid) of every process in the box, as the kernel lists them."""
    return {t for t in _tids_of(tasks_file, root_pid) if _alive(t)}


def new_threads(tasks_file: Path | None, root_pid: int | None, before: set[int]) -> list[str]:
    """Threads and processes of the box that were not in `before`, still alive after a short settle."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        extra = box_threads(tasks_file, root_pid) - before
        if not extra or time.monotonic() > deadline:
            return [f"{_comm(t)} (tid {t})" for t in sorted(extra)]
        time.sleep(0.0002)
