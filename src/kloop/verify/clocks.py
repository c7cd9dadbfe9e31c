"""The sandbox's timers, captured before the candidate is imported.

`CpuClock` holds the `time.perf_counter_ns` function object itself, so patching `time` later
changes nothing here. `CudaClock` holds the event class and its methods, flushes L2 by writing a
buffer larger than L2 before each iteration, resets persisting-L2 lines (a carve-out the candidate
set up would otherwise keep its data hot), and synchronizes the whole device after each iteration
before the end event is recorded, so work on side streams is inside the measured interval. A candidate that reaches into this process's memory can
still tamper; the supervisor's wall-clock check is the backstop.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any


class CpuClock:
    """perf_counter_ns around one call; nothing to flush."""

    kind = "cpu"

    def __init__(self) -> None:
        self._now: Callable[[], int] = time.perf_counter_ns

    def sync(self) -> None:
        return None

    def time_call(self, call: Callable[[], Any]) -> tuple[int, Any]:
        now = self._now
        start = now()
        result = call()
        end = now()
        return end - start, result


class CudaClock:
    """CUDA events per iteration, L2 flush and persisting-L2 reset between iterations."""

    kind = "cuda"

    def __init__(self) -> None:
        import torch

        self._now = time.perf_counter_ns
        self._torch = torch
        self._event_cls = torch.cuda.Event
        self._record = torch.cuda.Event.record
        self._elapsed = torch.cuda.Event.elapsed_time
        self._synchronize = torch.cuda.synchronize
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or 0) or (64 << 20)
        self.l2_bytes = l2
        self._flush_buf = torch.empty(max(2 * l2, 256 << 20) // 4, dtype=torch.int32, device="cuda")
        self._cudart = _load_cudart()

    def sync(self) -> None:
        self._synchronize()

    def reset_persisting_l2(self) -> bool:
        """cudaCtxResetPersistingL2Cache: evict lines a candidate pinned as persisting."""
        fn = getattr(self._cudart, "cudaCtxResetPersistingL2Cache", None)
        return fn is not None and fn() == 0

    def prepare(self) -> None:
        """Before an iteration: drop persisting lines, overwrite L2, wait for everything."""
        self.reset_persisting_l2()
        self._flush_buf.fill_(0x5A5A)
        self._synchronize()

    def time_call(self, call: Callable[[], Any]) -> tuple[int, Any]:
        self.prepare()
        start = self._event_cls(enable_timing=True)
        end = self._event_cls(enable_timing=True)
        self._record(start)
        result = call()
        # Device-wide sync *before* the end event: work the candidate put on side streams (or
        # that is still queued) lands inside the measured interval instead of escaping it.
        self._synchronize()
        self._record(end)
        self._synchronize()
        return int(self._elapsed(start, end) * 1e6), result


def _load_cudart() -> Any:
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    try:
        import torch

        return ctypes.CDLL(torch._C.__file__)  # torch links cudart symbols into its libs
    except (OSError, AttributeError):
        return None


def make_clock(device: str) -> CpuClock | CudaClock:
    return CudaClock() if device == "cuda" else CpuClock()
