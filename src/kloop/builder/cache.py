"""The content-addressed build cache: one directory per key, published by atomic rename.

A key is the sha256 of everything that changes the build's output. An entry is complete when
its `manifest.json` exists, and it counts as a hit only when every file in it hashes as the
manifest's `files` map says (sha256 per file, re-checked on every load; an extra, missing or
changed file, or a symlink, makes it a miss that is never loaded).

Two ways to fill it:
- trusted builders (tests, tools; `BuildCache(root)`) compile into a staging directory under an
  exclusive file lock and rename it into place, so concurrent builders of one key compile once;
- the verifier's sandbox (`BuildCache(root, staging=private_dir)`) may only read `root` (its
  Landlock ruleset and audit hook refuse writes there). On a miss it compiles into its private
  dir and reports the files' hashes before any candidate code runs; the supervisor `publish`es
  the entry after the sandbox is dead, and only if the files still hash as reported (code that
  ran at import time cannot hand a later verification a build that differs from the compiled one).
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
FILES = "files"
SANDBOX_STAGING = "build-stage"  # the sandbox's private build dir, beneath its workdir
_CHUNK = 1 << 20


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


def hash_tree(root: Path) -> dict[str, str]:
    """relpath -> sha256 of every file beneath `root` except the manifest; symlinks hash as their target.

    A symlink or anything that is not a regular file gets a value no real file can have, so an
    entry holding one never matches a manifest written for real files.
    """
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST:
            continue
        if path.is_symlink():
            out[rel] = f"symlink:{os.readlink(path)}"
        elif path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            out[rel] = digest.hexdigest()
        elif not path.is_dir():
            out[rel] = "special"
    return out


def tree_mismatch(root: Path, expected: dict[str, str]) -> str | None:
    """Why the files beneath `root` differ from `expected` (first difference), or None when equal."""
    try:
        actual = hash_tree(root)
    except OSError as exc:
        return f"unreadable: {exc}"
    for rel in sorted(set(actual) | set(expected)):
        if rel not in actual:
            return f"{rel} missing"
        if rel not in expected:
            return f"{rel} not in the manifest"
        if actual[rel] != expected[rel]:
            return f"{rel} changed"
    return None


class BuildCache:
    """Entries under `root/<key[:2]>/<key>/`, each with a manifest written last."""

    def __init__(self, root: Path | None = None, staging: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self.staging = Path(staging) if staging is not None else None
        """Private build directory of a reader that may not write `root` (the sandbox)."""
        self.refused: dict[str, str] = {}
        """key -> why an entry with a manifest was not trusted (its files did not hash as listed)."""

    def entry_dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def staged_dir(self, key: str) -> Path:
        assert self.staging is not None
        return self.staging / key[:2] / key

    def manifest(self, key: str) -> dict[str, Any] | None:
        """The manifest of a complete entry whose files all hash as it lists, else None."""
        entry = self.entry_dir(key)
        try:
            found = json.loads((entry / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        files = found.get(FILES) if isinstance(found, dict) else None
        why = "no per-file hashes" if not isinstance(files, dict) else tree_mismatch(entry, files)
        if why is not None or found.get("key") != key:
            self.refused[key] = why or "manifest names another key"
            return None
        return found

    def ensure(self, key: str, compile_into: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any], bool]:
        """The entry for `key`, compiling it once if needed: (entry dir, manifest, was it a hit).

        `compile_into(staging_dir)` fills a private directory and returns manifest facts; on
        any exception the staging directory is removed and the exception propagates.
        """
        found = self.manifest(key)
        if found is not None:
            return self.entry_dir(key), found, True
        if self.staging is not None:
            return self._stage(key, compile_into)
        final = self.entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(final.parent / f"{key}.lock"):
            found = self.manifest(key)
            if found is not None:  # another process built it while we waited
                return final, found, True
            _discard(final)  # an incomplete or corrupt leftover: never trust it
            staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=final.parent))
            try:
                manifest = _compile_with_manifest(key, staging, compile_into)
                os.rename(staging, final)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return final, manifest, False

    def _stage(self, key: str, compile_into: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any], bool]:
        """Compile into the private staging dir (no lock: nobody else writes there)."""
        staged = self.staged_dir(key)
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir(parents=True)
        try:
            return staged, _compile_with_manifest(key, staged, compile_into), False
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise

    def publish(self, staged: Path, manifest: dict[str, Any]) -> str | None:
        """Supervisor side, after the sandbox is dead: copy a staged entry in if it is what was compiled.

        `manifest` is the one the sandbox reported before any candidate code ran. Returns None
        when published (or already present and intact), else why not.
        """
        key, files = str(manifest.get("key", "")), manifest.get(FILES)
        if len(key) != 64 or not all(c in "0123456789abcdef" for c in key) or not isinstance(files, dict):
            return "the staged manifest names no key or files"
        if manifest.get("imported_at_build"):
            return "its code ran during the build (no compile-only step in this torch), so it stays private"
        why = tree_mismatch(staged, files)
        if why is not None:
            return f"staged build changed after it was compiled: {why}"
        final = self.entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(final.parent / f"{key}.lock"):
            if self.manifest(key) is not None:
                return None
            _discard(final)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=final.parent))
            try:
                shutil.copytree(staged, tmp, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
                why = tree_mismatch(tmp, files)
                if why is not None:
                    raise OSError(f"copy differs: {why}")
                (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
                os.rename(tmp, final)
            except OSError as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                return f"could not publish: {exc}"
        return None


def _compile_with_manifest(key: str, into: Path, compile_into: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Run the compile step, then hash what it left and write the manifest last."""
    began = time.perf_counter()
    facts = compile_into(into)
    manifest = {**facts, "key": key, "compile_seconds": round(time.perf_counter() - began, 3),
                "built_by_pid": os.getpid(), "built_at": time.time(), FILES: hash_tree(into)}
    (into / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def _discard(path: Path) -> None:
    """Move a leftover entry aside and delete it (a rename is atomic; rmtree of a live path is not)."""
    if not path.exists() and not path.is_symlink():
        return
    trash = path.parent / f".trash-{os.getpid()}-{time.time_ns()}"
    try:
        os.rename(path, trash)
    except OSError:
        trash = path
    if trash.is_symlink() or trash.is_file():
        trash.unlink(missing_ok=True)
    else:
        shutil.rmtree(trash, ignore_errors=True)
