"""Short measurements of copy bandwidth and matmul rate, cached per device.

A measurement takes about a second: a large buffer copy (bytes read + written / time, best of
a few) and a square matmul (2 n^3 / time, best of a few). Results live in
`$KLOOP_HOME/device-cache.json` keyed by device name, runtime, torch version and thread count,
so every later verification reuses them; `kloop doctor --remeasure` refreshes them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kloop.device.schema import DeviceInfo, DeviceKind, DtypeClass, PeakMeasurement

CACHE_VERSION = 1

# (kind) -> (copy buffer bytes, matmul n, matmul dtype classes, repeats)
MEASUREMENT_PLAN: dict[DeviceKind, tuple[int, int, tuple[DtypeClass, ...], int]] = {
    DeviceKind.CPU: (256 << 20, 1024, (DtypeClass.FP32,), 4),
    DeviceKind.CUDA: (2 << 30, 8192, (DtypeClass.BF16, DtypeClass.FP32), 10),
    DeviceKind.ROCM: (2 << 30, 8192, (DtypeClass.BF16, DtypeClass.FP32), 10),
}

_TORCH_DTYPE = {DtypeClass.FP32: "float32", DtypeClass.BF16: "bfloat16", DtypeClass.FP16: "float16"}


def _best_seconds(step: Callable[[], None], repeats: int, gpu: bool) -> float:
    """Fastest of `repeats` timed calls after one warm-up (device events on a GPU)."""
    import torch

    step()
    best = float("inf")
    for _ in range(repeats):
        if gpu:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            stop.record()
            stop.synchronize()
            best = min(best, start.elapsed_time(stop) / 1e3)
        else:
            began = time.perf_counter_ns()
            step()
            best = min(best, (time.perf_counter_ns() - began) / 1e9)
    return best


def measure_peaks(kind: DeviceKind) -> PeakMeasurement:
    """Measure copy bandwidth and matmul rate on the current torch device of `kind`."""
    import torch

    copy_bytes, n, dtypes, repeats = MEASUREMENT_PLAN[kind]
    gpu = kind is not DeviceKind.CPU
    device = "cuda" if gpu else "cpu"
    began = time.perf_counter()
    src = torch.ones(copy_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy_s = _best_seconds(lambda src=src, dst=dst: dst.copy_(src), repeats, gpu)
    del src, dst
    rates: dict[DtypeClass, float] = {}
    for dtype_class in dtypes:
        dtype = getattr(torch, _TORCH_DTYPE[dtype_class])
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        seconds = _best_seconds(lambda a=a, b=b, out=out: torch.mm(a, b, out=out), max(2, repeats // 2), gpu)
        rates[dtype_class] = 2.0 * n**3 / seconds
    return PeakMeasurement(
        copy_gbs=2.0 * copy_bytes / copy_s / 1e9,
        copy_bytes=copy_bytes,
        matmul_flops=rates,
        matmul_n=n,
        threads=torch.get_num_threads(),
        seconds=round(time.perf_counter() - began, 3),
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the cache file (concurrent verifiers write it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_entries(path: Path) -> dict[str, Any]:
    """All cached entries; an unreadable or foreign file counts as empty (it is only a cache)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def load_cached(path: Path, key: str) -> DeviceInfo | None:
    """The cached DeviceInfo for `key`, or None (missing, stale format or invalid)."""
    raw = _read_entries(path).get(key)
    if raw is None:
        return None
    try:
        return DeviceInfo.model_validate(raw)
    except ValidationError:
        return None


def store(path: Path, info: DeviceInfo) -> None:
    """Add or replace one device's entry; atomic rename so readers never see half a file."""
    with _locked(path):
        entries = _read_entries(path)
        entries[info.cache_key] = info.model_dump(mode="json")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=2, sort_keys=True))
        os.replace(tmp, path)
