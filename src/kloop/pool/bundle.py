"""Content-addressed file bundles: how a task or a candidate travels to a pool worker.

A bundle is every regular file under a directory, keyed by its relative path, plus one digest
over the sorted (path, sha256) pairs. The worker recomputes the digest before it uses a
bundle, so a bundle damaged or altered on the way is refused, and identical bundles (the
sealed task, sent with every candidate) are unpacked once per worker.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
from pathlib import Path

from pydantic import BaseModel, Field

from kloop.errors import BadInput, HarnessFailure

MAX_BUNDLE_BYTES = 64 * 1024 * 1024
SKIP = {"__pycache__", ".git"}


class Bundle(BaseModel):
    """A directory's files (base64) and the digest that names them."""

    digest: str = Field(description="sha256 over the sorted `path\\0sha256(content)` lines.")
    files: dict[str, str] = Field(description="POSIX relative path -> base64 content.")

    @classmethod
    def from_dir(cls, root: Path) -> Bundle:
        if not root.is_dir():
            raise BadInput(root, "not a directory to bundle")
        files: dict[str, bytes] = {}
        total = 0
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if any(part in SKIP for part in rel.parts) or path.suffix == ".pyc":
                continue
            if path.is_symlink():
                raise BadInput(path, "a bundle holds regular files only (a symlink here)")
            if path.is_file():
                data = path.read_bytes()
                total += len(data)
                if total > MAX_BUNDLE_BYTES:
                    raise BadInput(root, f"more than {MAX_BUNDLE_BYTES >> 20} MiB to send to a worker")
                files[rel.as_posix()] = data
        return cls(digest=digest_of(files), files={k: base64.b64encode(v).decode() for k, v in files.items()})

    def decoded(self) -> dict[str, bytes]:
        """The files, after checking the digest names exactly these bytes."""
        files = {k: base64.b64decode(v) for k, v in self.files.items()}
        if digest_of(files) != self.digest:
            raise HarnessFailure(f"bundle {self.digest[:12]}: its files do not hash to its digest")
        return files

    def materialize(self, dest: Path) -> Path:
        """Write the files under `dest` (created fresh); refuses paths that leave it."""
        files = self.decoded()
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for rel, data in files.items():
            target = (dest / rel).resolve()
            if rel.startswith("/") or ".." in Path(rel).parts or dest.resolve() not in target.parents:
                raise HarnessFailure(f"bundle {self.digest[:12]}: path {rel!r} leaves the bundle")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return dest

    def cached(self, cache_root: Path) -> Path:
        """The bundle unpacked once under `cache_root/<digest>` (re-checked file by file on reuse)."""
        dest = cache_root / self.digest
        if dest.is_dir() and _matches(dest, self):
            return dest
        tmp = cache_root / f".{self.digest}.{os.getpid()}"
        self.materialize(tmp)
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        try:
            tmp.replace(dest)
        except OSError:  # another slot unpacked the same bundle first
            shutil.rmtree(tmp, ignore_errors=True)
            if not _matches(dest, self):
                raise HarnessFailure(f"bundle {self.digest[:12]}: cache entry {dest} does not match") from None
        return dest


def digest_of(files: dict[str, bytes]) -> str:
    lines = "".join(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n" for rel, data in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def _matches(root: Path, bundle: Bundle) -> bool:
    try:
        return Bundle.from_dir(root).digest == bundle.digest
    except (BadInput, OSError):
        return False
