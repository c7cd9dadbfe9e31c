"""Speed of light: how close a measured candidate is to the device's physical limit.

For each timed workload, the floor is max(min bytes / peak bandwidth, FLOPs / peak rate); the
fraction is floor / measured latency, and the run's number is the geometric mean. Peaks come
from `kloop.device.detect` (upper bounds, so the fraction errs low: kloop stops early only when
the evidence is strong). Unknown anywhere -> no fractions, and the stop never fires.

The loop stores the per-workload fractions beside the run's number: the report shows those, on
the device the run measured, and never detects the device it is rendered on.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kloop.verify.result import VerifyResult

if TYPE_CHECKING:
    from kloop.device import DeviceInfo


class Ceiling(Protocol):
    def fractions(self, task_dir: Path, result: VerifyResult) -> dict[str, float]:
        """Workload uuid -> floor / latency for each timed listed workload ({} where unknown)."""
        ...


def overall(fractions: dict[str, float]) -> float | None:
    """The run's speed-of-light number: the geometric mean over workloads."""
    logs = [math.log(f) for f in fractions.values()]
    return math.exp(sum(logs) / len(logs)) if logs else None


class NoCeiling:
    def fractions(self, task_dir: Path, result: VerifyResult) -> dict[str, float]:
        return {}


class DeviceCeiling:
    """The physics floor of the device the run verifies on."""

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._info: DeviceInfo | None = None

    def fractions(self, task_dir: Path, result: VerifyResult) -> dict[str, float]:
        try:
            return self._fractions(task_dir, result)
        except Exception:  # a missing peak or an odd definition means "unknown", never a failed run
            return {}

    def _fractions(self, task_dir: Path, result: VerifyResult) -> dict[str, float]:
        from kloop.device import DTYPE_CLASS_OF
        from kloop.device.detect import detect
        from kloop.task.load import load_task
        from kloop.task.shapes import flops_for, min_bytes_for

        info = self._info = self._info or detect(self.device)
        definition = load_task(task_dir).definition
        dtype = next(iter(definition.outputs.values())).dtype.value
        peak_flops = info.peak_flops.get(DTYPE_CLASS_OF.get(dtype))
        out: dict[str, float] = {}
        for w in result.workloads:
            if w.heldout or not w.latency_ms:
                continue
            axes = {**definition.const_axes, **w.axes}
            floor_s = min_bytes_for(definition, axes) / (info.peak_bandwidth_gbs * 1e9)
            flops = flops_for(definition, axes)
            if flops and peak_flops:
                floor_s = max(floor_s, flops / peak_flops)
            out[w.uuid] = floor_s * 1e3 / w.latency_ms
        return out
