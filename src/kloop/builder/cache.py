"""The content-addressed build cache: one directory per key, published by atomic rename.

A key is the sha256 of everything that changes the build's output. An entry is complete when
its `manifest.json` exists; builders compile into a private staging directory under an
exclusive file lock, then rename it into place, so concurrent builders of one key compile once
and readers never see half an entry. A warm entry is loaded without taking the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kloop.device.paths import kloop_home

KEY_SCHEME = "kloop-build-1"  # bump when the layout of an entry changes
MANIFEST = "manifest.json"


def default_cache_dir() -> Path:
    """`$KLOOP_HOME/build-cache` (KLOOP_HOME defaults to ~/.kloop)."""
    return kloop_home() / "build-cache"


def _canonical_spec(spec: Any) -> dict[str, Any]:
    """The parts of a BuildSpec that change the built artifacts.

    Left out: the entry symbol and destination passing (read when loading, not compiling: a
    candidate that only renames its entry reuses the build), target_hardware (advisory) and the
    declared binding: the builder's fingerprint carries the binding it resolves to, so
    `binding: null` and `binding: torch` (the same build) share one key.
    """
    def plain(value: Any) -> Any:
        return getattr(value, "value", value)

    return {
        "language": plain(spec.language),
        "entry_file": spec.entry_point.split("::")[0],
        "dependencies": sorted(spec.dependencies or []),
    }


def cache_key(solution: Any, *, kind: str, arch: str, toolchain: dict[str, str]) -> str:
    """sha256 over sources, spec, language, toolchain versions, device arch and compile flags.

    Names, authors and descriptions are left out: renaming a solution does not rebuild it.
    """
    sources = sorted((src.path, hashlib.sha256(src.content.encode()).hexdigest()) for src in solution.sources)
    material = {
        "scheme": KEY_SCHEME,
        "spec": _canonical_spec(solution.spec),
        "sources": sources,
        "device": {"kind": kind, "arch": arch},
        "toolchain": dict(sorted(toolchain.items())),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock; released by the kernel if the holder dies."""
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class BuildCache:
    """Entries under `root/<key[:2]>/<key>/`, each with a manifest written last."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def entry_dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def manifest(self, key: str) -> dict[str, Any] | None:
        """The manifest of a complete entry, or None."""
        try:
            return json.loads((self.entry_dir(key) / MANIFEST).read_text())
        except (OSError, ValueError):
            return None

    def ensure(self, key: str, compile_into: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any], bool]:
        """The entry for `key`, compiling it once if needed: (entry dir, manifest, was it a hit).

        `compile_into(staging_dir)` fills a private directory and returns manifest facts; on
        any exception the staging directory is removed and the exception propagates.
        """
        found = self.manifest(key)
        if found is not None:
            return self.entry_dir(key), found, True
        final = self.entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(final.parent / f"{key}.lock"):
            found = self.manifest(key)
            if found is not None:  # another process built it while we waited
                return final, found, True
            if final.exists():  # an incomplete leftover (no manifest): never trust it
                shutil.rmtree(final, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=final.parent))
            try:
                began = time.perf_counter()
                facts = compile_into(staging)
                manifest = {**facts, "key": key, "compile_seconds": round(time.perf_counter() - began, 3),
                            "built_by_pid": os.getpid(), "built_at": time.time()}
                (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
                os.rename(staging, final)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return final, manifest, False
