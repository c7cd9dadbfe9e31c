"""`build_solution`: pick the builder by language, key the cache, compile once, load.

Runs inside the verifier's sandbox process only: loading a build imports untrusted code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kloop.builder.cache import BuildCache, cache_key
from kloop.builder.extension import TorchExtensionBuilder
from kloop.builder.python_import import PythonBuilder, TritonBuilder
from kloop.builder.registry import builder_for, register_builder
from kloop.builder.result import BuiltSolution
from kloop.device.detect import identify, resolve_kind
from kloop.device.schema import DeviceInfo, DeviceKind
from kloop.task.tunables import render_tunables

for _builder in (PythonBuilder(), TritonBuilder(), TorchExtensionBuilder()):
    register_builder(_builder)


def _device_of(device: DeviceInfo | DeviceKind | str) -> tuple[DeviceKind, str]:
    """(kind, arch) from a DeviceInfo, an arch (`sm_90`, `gfx942`) or a request (`cpu`, `cuda`, `auto`).

    A bare request is resolved to the real architecture of the device here (no measurement), so
    a cache shared between machines never hands one GPU's binary to another.
    """
    if isinstance(device, DeviceInfo):
        return device.kind, device.arch
    text = str(getattr(device, "value", device))
    if text.startswith("sm_"):
        return DeviceKind.CUDA, text
    if text.startswith("gfx"):
        return DeviceKind.ROCM, text
    kind = resolve_kind(text)
    return kind, identify(kind)["arch"]


@dataclass
class Staged:
    """A compiled (or verified cached) build that has not been imported: no candidate code has run."""

    solution: Any
    builder: Any
    kind: DeviceKind
    language: str
    key: str
    entry_dir: Path
    manifest: dict[str, Any]
    hit: bool
    began: float
    refused: str | None = None
    """Why a cache entry with this key was not trusted (its files did not hash as listed), if one was."""


def compile_solution(solution: Any, *, device: DeviceInfo | DeviceKind | str, cache_dir: Path | None = None,
                     staging_dir: Path | None = None) -> Staged:
    """The compile half of `build_solution`: a verified cache hit, or a fresh compile (nothing imported).

    With `staging_dir` the cache is only read and a miss compiles there (the sandbox's way: the
    supervisor publishes the entry later, see `BuildCache.publish`).
    """
    began = time.perf_counter()
    solution = render_tunables(solution)  # a solution declaring tunables builds as its defaults
    language = str(getattr(solution.spec.language, "value", solution.spec.language))
    builder = builder_for(language)
    kind, arch = _device_of(device)
    key = cache_key(solution, kind=kind.value, arch=arch, toolchain=builder.fingerprint(solution, kind, arch))
    module_name = f"kloop_{language}_{key[:20]}"
    cache = BuildCache(cache_dir, staging=staging_dir)
    entry_dir, manifest, hit = cache.ensure(
        key, lambda staging: builder.compile(solution, staging, kind, arch, module_name))
    return Staged(solution=solution, builder=builder, kind=kind, language=language, key=key, entry_dir=entry_dir,
                  manifest=manifest, hit=hit, began=began, refused=cache.refused.get(key))


def load_staged(staged: Staged) -> BuiltSolution:
    """The import half: runs the candidate's import-time code."""
    builder, kind, language = staged.builder, staged.kind, staged.language
    fn = builder.load(staged.solution, staged.entry_dir, staged.manifest, kind)
    notes = [] if builder.timing_meaningful(kind) else [f"{language} on {kind.value}: timing not meaningful"]
    return BuiltSolution(fn=fn, language=language,
                         destination_passing=bool(staged.solution.spec.destination_passing_style),
                         timing_meaningful=builder.timing_meaningful(kind), cache_key=staged.key,
                         cache_hit=staged.hit, artifact_dir=staged.entry_dir,
                         build_seconds=time.perf_counter() - staged.began, notes=notes)  # fmt: skip


def build_solution(solution: Any, *, device: DeviceInfo | DeviceKind | str, cache_dir: Path | None = None,
                   solution_dir: Path | None = None) -> BuiltSolution:
    """Build (or load from the cache) a Solution into a callable for `device`.

    Unresolved `${NAME}` placeholders are filled with the default tunable configuration.
    `solution_dir` is informational: sources are taken from the Solution only, so the build is
    hermetic. Raises BuildError (the verifier's COMPILE_ERROR) when the candidate does not build.
    """
    return load_staged(compile_solution(solution, device=device, cache_dir=cache_dir))
