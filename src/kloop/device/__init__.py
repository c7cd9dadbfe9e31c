"""What hardware is here (cpu / cuda / rocm), its peak rates, and which tools exist.

`detect()` answers for the verifier's physics floor and the build cache; `tools()` for the
doctor, the builders and the profilers. Importing this package does not import torch.
"""

from __future__ import annotations

from kloop.device.detect import SAFETY_FACTORS, detect, resolve_kind
from kloop.device.paths import device_cache_path, kloop_home
from kloop.device.schema import DTYPE_CLASS_OF, DeviceInfo, DeviceKind, DtypeClass, PeakMeasurement, ToolInfo
from kloop.device.tools import describe_tools, tools, version_text, which

__all__ = [
    "DTYPE_CLASS_OF",
    "SAFETY_FACTORS",
    "DeviceInfo",
    "DeviceKind",
    "DtypeClass",
    "PeakMeasurement",
    "ToolInfo",
    "describe_tools",
    "detect",
    "device_cache_path",
    "kloop_home",
    "resolve_kind",
    "tools",
    "version_text",
    "which",
]
