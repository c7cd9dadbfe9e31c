"""What one timed call's hand-off costs the box, and the floor this machine sets under it. Run by hand:

    .venv/bin/python bench/handoff_cost.py [--repeats 15] [--floor-only] [--no-pin]

Two parts:
- **floor**: a bare ping-pong between two processes pinned to one core (plain Python, no sandbox,
  no cgroup): CPU time of the woken side per round trip through a SEQPACKET socket, a pipe pair
  and an eventfd pair. No hand-off that blocks once per call can cost the box less than this.
- **box**: no-op batches (`noop=True`: the box reads `go`, writes `done`, runs nothing) through the
  real `BoxSlots` into a real sandbox, for slot sizes 24 KiB, 1 MiB, 4 MiB and 2-32 calls a batch:
  the box's cgroup CPU time per call, as the verifier reads it (`harness_ms` is this, measured
  in the baseline's box). Small calls show the per-call floor plus the per-batch cost spread over
  the calls; large slots add the supervisor's copies of the slot, which run on the box's core.

To compare code versions, run it once per tree with PYTHONPATH=<tree>/src (the sandbox inherits it),
alternating, on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kloop.verify.handoff import MSG  # the hand-off's own message (no torch at import)

TRIPS = 20_000


def _child_cpu_us(run_child, run_parent) -> float:  # noqa: ANN001 - two closures over the same fds
    """CPU of the forked side per round trip, both sides pinned to CPU 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {0})
        run_child()
        os._exit(0)
    os.sched_setaffinity(0, {0})
    run_parent()
    os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / TRIPS * 1e6


def floor() -> dict[str, float]:
    """us of the woken side's CPU per round trip, per mechanism."""
    before = os.sched_getaffinity(0)
    out: dict[str, float] = {}
    fds: list[int] = []
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out["seqpacket socket"] = _child_cpu_us(
            lambda: [b.send(b.recv(8)) for _ in range(TRIPS)],
            lambda: [(a.send(MSG.pack(i)), a.recv(8)) for i in range(TRIPS)])  # fmt: skip
        go_r, go_w = os.pipe()
        done_r, done_w = os.pipe()
        out["pipe pair"] = _child_cpu_us(
            lambda: [os.write(done_w, os.read(go_r, 8)) for _ in range(TRIPS)],
            lambda: [(os.write(go_w, MSG.pack(i)), os.read(done_r, 8)) for i in range(TRIPS)])  # fmt: skip
        go, done = os.eventfd(0), os.eventfd(0)
        fds = [go_r, go_w, done_r, done_w, go, done]
        out["eventfd pair"] = _child_cpu_us(
            lambda: [os.eventfd_write(done, os.eventfd_read(go)) for _ in range(TRIPS)],
            lambda: [(os.eventfd_write(go, i + 1), os.eventfd_read(done)) for i in range(TRIPS)])  # fmt: skip
        a.close()
        b.close()
    finally:
        os.sched_setaffinity(0, before)
        for fd in fds:
            os.close(fd)
    return out


def box(repeats: int, pin: bool) -> list[tuple[int, int, float, float]]:
    """(slot KiB, calls a batch, median us, min us) of the box's CPU per no-op call."""
    import torch

    import kloop.verify.batches as batches
    from kloop.verify.batches import BoxSlots, layout_for
    from kloop.verify.handoff import pack_calls
    from kloop.verify.process import SandboxProcess

    if not pin:
        batches.box_cpus = lambda _box: None  # the supervisor's thread stays where it is
    tmp = Path(tempfile.mkdtemp(prefix="kloop-handoff-bench-"))
    sandbox = SandboxProcess(device="cpu", threads=1, memory_limit_mb=4096, log_path=tmp / "log.txt").start()
    rows = []
    try:
        sandbox.wait_ready()
        for nbytes in (24 << 10, 1 << 20, 4 << 20):
            n = nbytes // 8  # input and output of n float32 each
            inputs = {"x": torch.randn(n)}
            specs = [{"name": "y", "dtype": "float32", "shape": [n]}]
            layout = layout_for(inputs, specs, 32)
            slots = BoxSlots(sandbox, layout, inputs, specs, 30.0)
            packed = pack_calls(layout, [{"x": torch.randn(n)} for _ in range(32)], [1234.5, 77])
            try:
                for count in (2, 3, 15, 32):
                    per = []
                    for _ in range(repeats):
                        take = slots.run(packed, count, True, 30.0)
                        if take.cpu_ns is None:
                            raise SystemExit("the sandbox has no cpuacct group here: nothing to measure")
                        per.append(take.cpu_ns / count / 1e3)
                    rows.append((layout.slot_bytes >> 10, count, statistics.median(per), min(per)))
            finally:
                slots.close()
    finally:
        sandbox.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="no-op batches per slot size and count")
    parser.add_argument("--floor-only", action="store_true", help="only the bare ping-pong")
    parser.add_argument("--no-pin", action="store_true", help="the supervisor's thread not moved to the box's CPUs")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
          f"python {sys.version.split()[0]}")  # fmt: skip
    print("floor: woken side's CPU per round trip, two processes on one core")
    for name, us in floor().items():
        print(f"  {name:<18} {us:6.2f} us")
    if args.floor_only:
        return 0
    print(f"box: CPU per no-op call (supervisor {'not ' if args.no_pin else ''}on the box's CPUs), "
          f"{args.repeats} batches each")  # fmt: skip
    print(f"  {'slot KiB':>8} {'calls':>5} {'median us':>10} {'min us':>8}")
    for kib, count, med, low in box(args.repeats, not args.no_pin):
        print(f"  {kib:>8} {count:>5} {med:>10.1f} {low:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
