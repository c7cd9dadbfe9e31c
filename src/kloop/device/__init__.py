"""What hardware is here (cpu / cuda / rocm), its peak rates, and which tools exist.

`kloop.device.detect.detect()` answers for the verifier's physics floor and the build cache; `tools()` for the
doctor, the builders and the profilers. Importing this package does not import torch.
"""

from __future__ import annotations

from kloop.lazy import lazy_exports

# Names load on first use (PEP 562): the device schema is pydantic, `kloop --help` need not load it.
# `detect()` and `tools()` are imported from their own modules (`kloop.device.detect`,
# `kloop.device.tools`): a lazy package attribute named like its submodule would be replaced by the
# submodule the moment anything imports it (tests/test_lazy_exports.py checks no name collides).
_EXPORTS = {
    **dict.fromkeys(["SAFETY_FACTORS", "resolve_kind"], "kloop.device.detect"),
    **dict.fromkeys(["device_cache_path", "kloop_home"], "kloop.device.paths"),
    **dict.fromkeys(["DTYPE_CLASS_OF", "DeviceInfo", "DeviceKind", "DtypeClass", "PeakMeasurement", "ToolInfo"],
                    "kloop.device.schema"),
    **dict.fromkeys(["describe_tools", "version_text", "which"], "kloop.device.tools"),
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DTYPE_CLASS_OF",
    "SAFETY_FACTORS",
    "DeviceInfo",
    "DeviceKind",
    "DtypeClass",
    "PeakMeasurement",
    "ToolInfo",
    "describe_tools",
    "device_cache_path",
    "kloop_home",
    "resolve_kind",
    "version_text",
    "which",
]
