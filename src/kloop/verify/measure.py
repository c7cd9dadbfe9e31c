"""Facts a verdict rests on, measured by the supervisor from memory and kernel interfaces (issue 29).

The sandbox's own reply used to carry the input digests and its live threads; a candidate that
patched the harness forged both (and passed). Now:
- `SharedInputs`: a correctness call's inputs live in a sealed memfd the supervisor created and
  maps too. The sandbox copies its staged inputs into it before each call and hands the call
  views of it; after the reply the supervisor compares that memory, byte for byte, with the
  tensors it staged. A call that changed its inputs is caught whatever the reply says. (On a GPU
  the harness copies the device inputs back into it after the call: there the copy-back runs in
  the candidate's process.) The comparison replaced a sha256 on each side: 2.3 ms per 3 MB input
  and run against 0.4 ms, and it cannot collide.
- `box_threads`: every thread of every process in the box, from the box's cgroup (`tasks`), or
  from /proc where there is no cgroup.
- `busy_threads`: of those not there before the candidate's code loaded, the ones that work after
  a reply. A thread that merely exists is not work: torch's intra-op pool after
  `torch.set_num_threads(8)`, multiprocessing's resource tracker, a helper asleep in a loop are
  all idle once the call returned, and counting them rejected honest kernels. So the supervisor
  watches each such thread from outside for a short window after the reply (its CPU time from
  /proc/<tid>/schedstat, its state from /proc/<tid>/stat) and names those that used CPU there,
  stayed runnable, or woke from a sleep and finished (deferred work) — never what the box says.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Read = Callable[[str], str]
"""How a /proc or cgroup file is read: `plain_read`, or the box's `Containment.read` (kept
descriptors, 5 us a read instead of 20-50 us: a reply's watch reads every thread of the box)."""


def plain_read(path: str) -> str:
    return Path(path).read_text()

ALIGN = 64


class SharedInputs:
    """One workload's staged inputs, laid out back to back in a sealed memfd both sides map.

    `sources` are the supervisor's own tensors as staged: nothing on its side changes them while
    they are staged, so they are what every call's inputs must still be.
    """

    def __init__(self, tensors: dict[str, Any]) -> None:
        from kloop.verify.channel import WIRE_DTYPES, ProtocolViolation

        self.layout: list[dict[str, Any]] = []
        self.sources: dict[str, Any] = {}
        offset = 0
        for name, tensor in tensors.items():
            flat = _flat_bytes(tensor)
            dtype = str(tensor.dtype).removeprefix("torch.")
            if dtype not in WIRE_DTYPES:
                raise ProtocolViolation(f"dtype {dtype} cannot travel on the channel")
            self.layout.append({"name": name, "offset": offset, "dtype": dtype, "shape": list(tensor.shape),
                                "nbytes": flat.numel() * flat.element_size()})  # fmt: skip
            self.sources[name] = flat
            offset += (self.layout[-1]["nbytes"] + ALIGN - 1) // ALIGN * ALIGN
        self.size = max(offset, ALIGN)
        self.fd = os.memfd_create("kloop-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.size)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.map = mmap.mmap(self.fd, self.size)
        for entry in self.layout:
            if entry["nbytes"]:
                self._view(entry, self.sources[entry["name"]].dtype).copy_(self.sources[entry["name"]])

    def changed(self) -> list[str]:
        """The inputs whose bytes in the supervisor's own mapping differ from what it staged."""
        import torch

        return [e["name"] for e in self.layout
                if e["nbytes"] and not torch.equal(self._view(e, self.sources[e["name"]].dtype), self.sources[e["name"]])]  # fmt: skip

    def _view(self, entry: dict[str, Any], dtype: Any) -> Any:
        import torch

        count = entry["nbytes"] // dtype.itemsize
        return torch.frombuffer(self.map, dtype=dtype, count=count, offset=entry["offset"])

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _flat_bytes(tensor: Any) -> Any:
    """A tensor's bytes as a flat CPU view (no copy when it is already contiguous on the CPU), as
    int64 words where they divide it: compared 8 bytes at a time, 8x faster than bytewise."""
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return flat.view(torch.int64) if flat.numel() % 8 == 0 and flat.data_ptr() % 8 == 0 else flat


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


def _tids_of(tasks_file: Path | None, root_pid: int | None, read: Read = plain_read) -> set[int]:
    if tasks_file is not None:
        with contextlib.suppress(OSError, ValueError):
            return {int(t) for t in read(str(tasks_file)).split()}
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


def _alive(tid: int, read: Read = plain_read) -> bool:
    try:
        stat = read(f"/proc/{tid}/stat")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :][:1] not in ("Z", "X")


def _comm(tid: int) -> str:
    try:
        return Path(f"/proc/{tid}/comm").read_text().strip()
    except OSError:
        return "?"


def box_threads(tasks_file: Path | None, root_pid: int | None, read: Read = plain_read) -> set[int]:
    """Every live thread (host tid) of every process in the box, as the kernel lists them."""
    return {t for t in _tids_of(tasks_file, root_pid, read) if _alive(t, read)}


WATCH_S = 0.03
"""How long threads the candidate started are watched after a reply (only when there are any)."""
QUIET_S = 0.01
"""A watch ends early once every such thread has slept this long without using any CPU."""
SAMPLE_S = 0.002
BUSY_CPU_FRACTION = 0.25
"""CPU time above this fraction of the watch is work (OpenMP's spin-wait after a parallel region used
0.9-2.3 ms here; a thread that computes gets most of a CPU even on a loaded one)."""

EXIT_CPU_MS = 0.5
"""A thread that ends after the reply may use this much CPU on its way out; one that used more computed
after the reply (deferred work). A joined thread's exit costs tens of microseconds on a quiet machine,
but an honest `threading.Timer` waking to end (tests/verify/redteam/containment/honest_short_timer)
used 0.22 ms in a CI rehearsal on this 2-core VM, against the 0.2 ms this was: it rejected the kernel."""


def _cpu_ns(tid: int, read: Read = plain_read) -> int | None:
    """A thread's CPU time in ns: schedstat's sum_exec_runtime, else stat's utime+stime (ticks)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(read(f"/proc/{tid}/schedstat").split()[0])
    try:
        fields = read(f"/proc/{tid}/stat")
        rest = fields[fields.rindex(")") + 2 :].split()
        return (int(rest[11]) + int(rest[12])) * (1_000_000_000 // os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _state(tid: int, read: Read = plain_read) -> str | None:
    """The thread's scheduler state letter (R running or runnable, S sleeping, ...); None when gone."""
    try:
        stat = read(f"/proc/{tid}/stat")
    except OSError:
        return None
    state = stat[stat.rindex(")") + 2 :][:1]
    return None if state in ("Z", "X", "") else state


class _Watched:
    """One thread's record over a watch: CPU at first sight, last CPU seen, states seen."""

    def __init__(self, tid: int, cpu: int, state: str, first_seen_at_reply: bool) -> None:
        self.tid, self.name = tid, _comm(tid)
        self.cpu0, self.cpu = (cpu if first_seen_at_reply else 0), cpu
        self.state0 = state if first_seen_at_reply else "new"
        self.states: list[str] = []
        self.gone = False


def _settle(tasks_file: Path | None, root_pid: int | None, before: set[int], limit_s: float, read: Read) -> None:
    """Wait (at most `limit_s`) until the candidate's threads are all asleep and used no CPU for QUIET_S."""
    deadline = time.monotonic() + limit_s
    last: dict[int, int | None] = {}
    while time.monotonic() < deadline:
        now = {t: _cpu_ns(t, read) for t in box_threads(tasks_file, root_pid, read) - before}
        if now == last and all(_state(t, read) != "R" for t in now):
            return
        last = now
        time.sleep(QUIET_S)


def busy_threads(tasks_file: Path | None, root_pid: int | None, before: set[int], *, settle_s: float = 0.0,
                 watch_s: float = WATCH_S, quiet_s: float = QUIET_S, read: Read = plain_read) -> list[str]:  # fmt: skip
    """Threads the candidate started that work after the reply, each with what it did.

    Called right after a reply. A thread is named when, within `watch_s`, it used more than
    `BUSY_CPU_FRACTION` of it in CPU time, was runnable at every sample of the watch's second half
    (it wants a CPU it may not get on a loaded machine), or used more than `EXIT_CPU_MS` and then
    ended. Threads that only exist, or wake briefly from a sleep, are not named; nor is a thread
    asleep at the reply that wakes and ends (an honest `threading.Timer`, a pool shut down without
    waiting: flagging it rejected honest kernels). Work such a thread could do after the reply
    reaches nothing the verdict reads: a call's outputs are taken at its reply (at `done` in a
    timed batch), its inputs are compared after this watch, and a batch's CPU time is the box's
    cgroup's, read once the box is off the CPU (`kloop.verify.batches`). No thread beyond
    `before`: nothing to watch, no wait. `settle_s` (after an import): the watch starts once the
    threads went quiet, or after `settle_s`; start-up work (a helper process importing, a pool
    spawning) is not the work this check is about, what is still busy afterwards is.
    """
    if settle_s > 0:
        _settle(tasks_file, root_pid, before, settle_s, read)
    start = time.monotonic()
    watched: dict[int, _Watched] = {}
    for tid in box_threads(tasks_file, root_pid, read) - before:
        cpu, state = _cpu_ns(tid, read), _state(tid, read)
        if cpu is not None and state is not None:
            watched[tid] = _Watched(tid, cpu, state, first_seen_at_reply=True)
    if not watched:
        return []
    while True:
        time.sleep(SAMPLE_S)
        now = time.monotonic() - start
        for tid in box_threads(tasks_file, root_pid, read) - before - watched.keys():
            cpu, state = _cpu_ns(tid, read), _state(tid, read)
            if cpu is not None and state is not None:
                watched[tid] = _Watched(tid, cpu, state, first_seen_at_reply=False)
        for w in watched.values():
            if w.gone:
                continue
            cpu, state = _cpu_ns(w.tid, read), _state(w.tid, read)
            if cpu is None or state is None:
                w.gone = True
                continue
            w.cpu = cpu
            w.states.append(state)
        quiet = all(not w.gone and w.cpu == w.cpu0 and w.state0 != "new" and "R" not in w.states
                    for w in watched.values())  # fmt: skip
        if now >= watch_s or (quiet and now >= quiet_s):
            break
    elapsed = time.monotonic() - start
    busy: list[str] = []
    for w in sorted(watched.values(), key=lambda w: w.tid):
        used_ms = (w.cpu - w.cpu0) / 1e6
        late = w.states[len(w.states) // 2 :]
        if used_ms > BUSY_CPU_FRACTION * elapsed * 1e3:
            busy.append(f"{w.name} (tid {w.tid}): {used_ms:.1f} ms of CPU in the {elapsed * 1e3:.0f} ms after the reply")
        elif not w.gone and len(late) >= 3 and all(s == "R" for s in late):
            busy.append(f"{w.name} (tid {w.tid}): runnable throughout the {elapsed * 1e3:.0f} ms after the reply")
        elif w.gone and w.state0 != "new" and used_ms > EXIT_CPU_MS:  # computed after the reply, then went
            busy.append(f"{w.name} (tid {w.tid}): {used_ms:.2f} ms of CPU after the reply, then ended")
    return busy
