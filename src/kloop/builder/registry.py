"""Builders by language name; checked when registered, so a bad builder fails at import time.

A builder turns a solution into files in a cache entry (`compile`) and those files into a
callable (`load`). The two halves let a warm cache skip the compiler entirely.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kloop.builder.result import UnknownLanguage
from kloop.device.schema import DeviceKind


@runtime_checkable
class Builder(Protocol):
    """One language's way from sources to a callable."""

    languages: tuple[str, ...]
    """Language names this builder serves."""

    def fingerprint(self, solution: Any, kind: DeviceKind, arch: str) -> dict[str, str]:
        """Toolchain versions and flags that change the build output (they enter the cache key)."""
        ...

    def compile(self, solution: Any, entry_dir: Path, kind: DeviceKind, arch: str, module_name: str) -> dict[str, Any]:
        """Write sources and build artifacts into `entry_dir`; return manifest facts for `load`."""
        ...

    def load(self, solution: Any, entry_dir: Path, manifest: dict[str, Any], kind: DeviceKind) -> Callable[..., Any]:
        """Import the built artifacts and return the entry point."""
        ...

    def timing_meaningful(self, kind: DeviceKind) -> bool:
        """Whether timings of this build on `kind` reflect the kernel."""
        ...


_BUILDERS: dict[str, Builder] = {}


def register_builder(builder: Builder) -> None:
    """Register `builder` for each of its languages; reject malformed builders and duplicates."""
    if not isinstance(builder, Builder):
        raise TypeError(f"{type(builder).__name__} is not a Builder (needs languages, fingerprint, compile, load, "
                        "timing_meaningful)")
    if not builder.languages or not all(isinstance(name, str) and name for name in builder.languages):
        raise TypeError(f"{type(builder).__name__}.languages must be non-empty names")
    for name in builder.languages:
        existing = _BUILDERS.get(name)
        if existing is not None and existing is not builder:
            raise ValueError(f"language {name!r} already has builder {type(existing).__name__}")
    for name in builder.languages:
        _BUILDERS[name] = builder


def builder_for(language: str) -> Builder:
    """The builder for `language`, or UnknownLanguage naming the ones kloop can build."""
    try:
        return _BUILDERS[language]
    except KeyError:
        known = ", ".join(sorted(_BUILDERS)) or "none"
        raise UnknownLanguage(f"no builder for language {language!r} (kloop builds: {known})") from None


def languages() -> list[str]:
    """Names of every registered language."""
    return sorted(_BUILDERS)
