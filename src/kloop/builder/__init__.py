"""Turning a Solution into a callable (python, triton, cpp, cuda, hip) behind one interface.

`build_solution` picks a builder by language from a registry, keys a content-hash cache
(sources, spec, toolchain versions, device arch, flags) and returns a `BuiltSolution`.
`check_compiles` is the compile-only path for CUDA/HIP where no GPU is present.
Tunables (`${NAME}` placeholders) are the task layer's: `kloop.task.tunables`.
"""

from __future__ import annotations

from kloop.builder.cache import BuildCache, cache_key, default_cache_dir
from kloop.builder.compile_check import CompileCheck, check_compiles
from kloop.builder.dispatch import build_solution
from kloop.builder.registry import Builder, builder_for, languages, register_builder
from kloop.builder.result import (
    BuildError,
    BuiltSolution,
    ToolchainMissing,
    UnknownLanguage,
    UnsupportedBinding,
)

__all__ = [
    "BuildCache",
    "BuildError",
    "Builder",
    "BuiltSolution",
    "CompileCheck",
    "ToolchainMissing",
    "UnknownLanguage",
    "UnsupportedBinding",
    "build_solution",
    "builder_for",
    "cache_key",
    "check_compiles",
    "default_cache_dir",
    "languages",
    "register_builder",
]
