"""Integrity: the task (definition, workloads, baseline) is the one that was sealed.

With an expected manifest ({relpath: sha256}, the loop's `sealed/manifest.json`) every listed file
must exist under the task root with that hash. Either way the task's own files are fingerprinted
before and after the candidate runs, so a change during verification is caught too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from kloop.task.load import Task
from kloop.verify.checks import CheckBook


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def task_files(task: Task) -> list[Path]:
    """The files the verdict depends on: definition, workloads and every baseline file."""
    files = [p for p in (task.definition_path, task.workloads_path) if p is not None and p.is_file()]
    base = task.baseline_path
    if base is not None and base.is_file():
        files.append(base)
    elif base is not None and base.is_dir():
        files.extend(sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts))
    return files


def file_hashes(task: Task) -> dict[Path, str]:
    """sha256 of every task file, read once: the fingerprint and the manifest check share them."""
    return {path.resolve(): sha256_file(path) for path in task_files(task)}


def task_fingerprint(task: Task, hashes: dict[Path, str] | None = None) -> str:
    """One sha256 over the task files' paths and contents (`hashes` when already computed)."""
    hashes = file_hashes(task) if hashes is None else hashes
    digest = hashlib.sha256()
    for path, sha in hashes.items():
        digest.update(str(path).encode() + b"\0" + sha.encode())
    return digest.hexdigest()


def verify_integrity(task: Task, manifest: dict[str, str] | None, book: CheckBook) -> str:
    """Compare the task root against `manifest` (or record the fingerprint); return the fingerprint.

    Each task file is read and hashed once here; the caller compares the returned fingerprint
    with a fresh one after the candidate ran.
    """
    hashes = file_hashes(task)
    fingerprint = task_fingerprint(task, hashes)
    if manifest is None:
        book.passed("integrity", f"no sealed manifest given; task fingerprint {fingerprint[:16]}")
        return fingerprint
    root = task.root.resolve()
    bad: list[str] = []
    for relpath, expected in sorted(manifest.items()):
        path = (root / relpath).resolve()
        if not path.is_relative_to(root):
            bad.append(f"{relpath} (outside the task)")
        elif not path.is_file():
            bad.append(f"{relpath} (missing)")
        elif (hashes.get(path) or sha256_file(path)) != expected.lower():
            bad.append(f"{relpath} (changed)")
    if bad:
        book.failed("integrity", f"sealed files differ: {', '.join(bad[:5])}")
    else:
        book.passed("integrity", f"{len(manifest)} sealed files match")
    return fingerprint
