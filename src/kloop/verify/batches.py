"""The supervisor's side of a timing batch: hand calls over one by one, read the clocks outside.

See `kloop.verify.handoff` for the protocol. `BoxSlots` is one box's slots for one workload;
`BoxSlots.run` times one batch and returns a `Take`: the box's cgroup CPU time over the batch,
the wall time of every call from `go` to `done` on the supervisor's clock, the slots as they were
at each `done`, and the sandbox's own report (only cross-checked).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kloop.verify.handoff import MSG, Layout, Region, make_layout
from kloop.verify.process import SandboxFailure, SandboxProcess


@dataclass
class Take:
    """One batch as the supervisor measured it."""

    count: int
    cpu_ns: int | None
    """The box's cgroup CPU time over the batch (None where the box has no cpuacct group)."""
    wall_ns: int
    """Sum over calls of go-to-done on the supervisor's clock (its own work between calls excluded)."""
    report: dict[str, Any]
    """The sandbox's `batch_report` (own times, misshapen outputs): a cross-check, never a measurement."""
    after: bytearray = field(repr=False, default_factory=bytearray)
    """Every call's slot as copied at its `done`."""
    failed_call: int | None = None
    """The call whose `done` said it raised (the error is in `report`)."""
    asleep_ns: int | None = None
    """Wall time of the calls that was neither the box's CPU time nor a wait for a CPU (the box's and
    the supervisor's run-queue delay, from /proc/<tid>/schedstat): time the box slept by choice."""


def box_cpu_ns(box: SandboxProcess, settled: bool = False) -> int | None:
    """CPU time of everything in the box (its cgroup, read by the kernel's accounting), or None."""
    containment = getattr(box, "containment", None)
    return containment.cpu_time_ns(settled) if containment is not None else None


def run_delay_ns(box: SandboxProcess) -> int | None:
    """Time the box's threads and this thread spent runnable but waiting for a CPU (load, not sleep)."""
    containment = getattr(box, "containment", None)
    return containment.run_delay_ns(threading.get_native_id()) if containment is not None else None


def box_cpus(box: SandboxProcess) -> tuple[int, ...] | None:
    """The CPUs the box's cpuset holds it to, or None without a cpuset."""
    containment = getattr(box, "containment", None)
    if containment is None or "cpuset" not in containment.dirs:
        return None
    return containment.limits.cpus


@contextlib.contextmanager
def on_cpus(cpus: tuple[int, ...] | None) -> Iterator[None]:
    """Run the calling thread on `cpus` for the batch: a hand-off is then a switch on one core."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def layout_for(inputs: dict[str, Any], output_specs: list[dict[str, Any]], count: int) -> Layout:
    import torch

    ins = [(n, str(v.dtype).removeprefix("torch."), list(v.shape), v.numel() * v.element_size())
           for n, v in inputs.items() if isinstance(v, torch.Tensor)]  # fmt: skip
    outs = []
    for spec in output_specs:
        size = torch.empty((), dtype=getattr(torch, spec["dtype"])).element_size()
        numel = 1
        for d in spec["shape"]:
            numel *= int(d)
        outs.append((spec["name"], spec["dtype"], list(spec["shape"]), numel * size))
    return make_layout(ins, outs, count)


class BoxSlots:
    """One box's slots for one workload, opened with a `handoff` request."""

    def __init__(self, box: SandboxProcess, layout: Layout, inputs: dict[str, Any], output_specs: list[dict[str, Any]],
                 timeout_s: float) -> None:  # fmt: skip
        import torch

        self.box, self.layout = box, layout
        self.region = Region(layout)
        order = list(inputs)
        scalars = {k: v for k, v in inputs.items() if not isinstance(v, torch.Tensor)}
        header = {"layout": layout.as_json(), "order": order, "scalars": scalars, "outputs": output_specs}
        try:
            reply, _ = box.request("handoff", header, timeout_s=timeout_s, fds=self.region.box_fds)
        finally:
            self.region.sent()  # the sandbox holds its own ends now
        if not reply.get("ok"):
            self.region.close()
            raise SandboxFailure("protocol", f"handoff refused: {str(reply.get('error'))[:200]}")
        self.cpus = box_cpus(box)

    def close(self) -> None:
        self.region.close()

    def run(self, packed: bytearray, count: int, noop: bool, timeout_s: float) -> Take:
        """Time `count` calls whose slots are `packed`; the box's CPU time is read before and after."""
        box, region, slot = self.box, self.region, self.layout.slot_bytes
        reply, _ = box.request("batch", {"count": count, "noop": noop}, timeout_s=timeout_s)
        if not reply.get("ok"):
            raise SandboxFailure("protocol", f"batch refused: {str(reply.get('error'))[:200]}")
        after = bytearray(slot * count)
        dst, src, out = region.view, memoryview(packed), memoryview(after)
        go, done, pack, unpack, now = region.go, region.done, MSG.pack, MSG.unpack, time.perf_counter_ns
        waiting = select.poll()
        waiting.register(done, select.POLLIN)
        timeout_ms = max(1, round(timeout_s * 1000))
        wall, failed = 0, None
        with on_cpus(self.cpus):
            cpu0 = box_cpu_ns(box, settled=True)
            delay0 = run_delay_ns(box)
            for i in range(count):
                a, b = i * slot, (i + 1) * slot
                dst[a:b] = src[a:b]  # call i exists in the sandbox only from here on
                t0 = now()
                _send(go, pack(i), box, i)
                msg = _recv(waiting, done, box, i, timeout_ms)
                wall += now() - t0
                out[a:b] = dst[a:b]  # the outputs as they are at `done`
                got = unpack(msg)[0] if len(msg) == MSG.size else None
                if got == -(i + 1):
                    failed = i
                    break
                if got != i:
                    box.kill()
                    raise SandboxFailure("protocol", f"timing hand-off: expected done {i}, got {msg!r:.40}")
            cpu1 = box_cpu_ns(box, settled=True)
            delay1 = run_delay_ns(box)
        report, _ = box.request("batch_report", {}, timeout_s=timeout_s)
        cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
        asleep = None
        if cpu is not None and delay0 is not None and delay1 is not None:
            asleep = max(wall - cpu - (delay1 - delay0), 0)
        return Take(count, cpu, wall, report, after, failed, asleep)


def _send(go: int, msg: bytes, box: SandboxProcess, index: int) -> None:
    try:
        os.write(go, msg)
    except OSError as exc:  # EPIPE: the box's end is closed, it died
        box.kill()
        raise SandboxFailure("died", f"timing hand-off: go {index}: {exc}") from None


def _recv(waiting: select.poll, done: int, box: SandboxProcess, index: int, timeout_ms: int) -> bytes:
    """The box's answer to call `index`; only this process holds `done`'s read end, so a read after
    poll() never blocks, and the box's death closes the write end (EOF)."""
    if not waiting.poll(timeout_ms):
        box.kill()
        raise SandboxFailure("timeout", f"timed call {index} not answered within {timeout_ms / 1000:g} s")
    try:
        msg = os.read(done, 64)
    except OSError as exc:
        box.kill()
        raise SandboxFailure("died", f"timing hand-off: {exc}") from None
    if not msg:
        box.kill()
        raise SandboxFailure("died", f"the sandbox closed the hand-off during timed call {index}")
    return msg
