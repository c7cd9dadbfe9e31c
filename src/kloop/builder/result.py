"""What a build produces, and how it fails.

A compile failure is the candidate's fault, not kloop's: the verifier turns `BuildError` into a
COMPILE_ERROR verdict. Its message is short (the compiler's first error lines), because it
travels into verdict JSON, agent prompts and reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.errors import KloopError


class BuildError(KloopError):
    """The solution did not build or import; the message says why in a few lines."""

    exit_code = 1  # a rejected candidate if it ever reaches the CLI, never a harness failure


class UnknownLanguage(BuildError):
    """No builder is registered for the solution's language."""


class ToolchainMissing(BuildError):
    """A compiler or build tool the language needs is not installed here (hipcc, nvcc, ninja, gcc)."""


class UnsupportedBinding(BuildError):
    """The solution asks for a binding this machine cannot provide (e.g. tvm-ffi)."""


@dataclass(frozen=True)
class BuiltSolution:
    """A callable candidate plus the facts the verifier needs to call and time it."""

    fn: Callable[..., Any]
    """The entry point: fn(*inputs, *outputs) with destination passing, else fn(*inputs) -> outputs."""
    language: str
    """The solution's language (`python`, `triton`, `cpp`, `cuda`, `hip`)."""
    destination_passing: bool
    """True when outputs are passed in as the last arguments and written in place."""
    timing_meaningful: bool
    """False when timings say nothing about the kernel (Triton's CPU interpreter)."""
    cache_key: str
    """sha256 of everything that went into the build (sources, spec, toolchain, device, flags)."""
    cache_hit: bool = False
    """True when the build came from the cache (nothing was compiled)."""
    artifact_dir: Path | None = None
    """The cache entry holding the sources and binaries of this build."""
    build_seconds: float = 0.0
    """Wall time of build_solution (compile or cache load)."""
    notes: list[str] = field(default_factory=list)
    """Facts worth recording in the verdict (e.g. `triton interpreter on CPU`)."""
