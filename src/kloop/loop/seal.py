"""sealed/: a read-only copy of the task and baseline that nobody in the loop may change.

The trusted hashes live outside the writer's reach (RUN_DIR/.kloop/manifest.json and the
lineage DB) next to a pristine copy (RUN_DIR/.kloop/pristine/). Every round, before
verification, sealed/ is compared file by file with the trusted hashes; any difference
rejects the round, and sealed/ is restored from the pristine copy before the next one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

from kloop.errors import BadInput, HarnessFailure

MANIFEST = "manifest.json"
SKIP_TOP = {"solutions", "__pycache__"}


def _walk_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            out.append(Path(dirpath) / name)
    return sorted(out)


def hash_tree(root: Path, skip: set[str] | None = None) -> dict[str, str]:
    """{relpath: sha256} of every file under root (symlinks recorded as `link:TARGET`)."""
    manifest: dict[str, str] = {}
    for path in _walk_files(root):
        rel = path.relative_to(root).as_posix()
        if skip and rel in skip:
            continue
        if path.is_symlink():
            manifest[rel] = "link:" + os.readlink(path)
        else:
            manifest[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return manifest


def _make_read_only(root: Path) -> None:
    for path in _walk_files(root):
        if not path.is_symlink():
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _make_writable(root: Path) -> None:
    for dirpath, _dirs, filenames in os.walk(root):
        Path(dirpath).chmod(0o755)
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(0o644)


def remove_tree(root: Path) -> None:
    if root.is_symlink() or root.is_file():
        root.unlink()
    elif root.exists():
        _make_writable(root)
        shutil.rmtree(root)


def _copy_task(task_dir: Path, dest: Path) -> None:
    def ignore(folder: str, names: list[str]) -> list[str]:
        top = Path(folder).resolve() == task_dir.resolve()
        return [n for n in names if n.startswith(".") or n == "__pycache__" or (top and n in SKIP_TOP)]

    shutil.copytree(task_dir, dest, ignore=ignore, symlinks=False)


class Seal:
    """The sealed copy of one run, its pristine twin and the trusted hashes."""

    def __init__(self, run_dir: Path) -> None:
        self.sealed = run_dir / "sealed"
        self.pristine = run_dir / ".kloop" / "pristine"
        self.trusted_path = run_dir / ".kloop" / MANIFEST

    def create(self, task_dir: Path) -> dict[str, str]:
        """Copy the task twice (sealed/ and pristine), hash it, write both manifests read-only."""
        if not (task_dir / "definition.json").is_file():
            raise BadInput(task_dir, "not a task directory (no definition.json)")
        _copy_task(task_dir, self.pristine)
        trusted = hash_tree(self.pristine)
        self.trusted_path.write_text(json.dumps(trusted, indent=1, sort_keys=True), encoding="utf-8")
        _make_read_only(self.pristine)
        self._materialize(trusted)
        return trusted

    def _materialize(self, trusted: dict[str, str]) -> None:
        remove_tree(self.sealed)
        shutil.copytree(self.pristine, self.sealed)
        (self.sealed / MANIFEST).write_text(json.dumps(trusted, indent=1, sort_keys=True), encoding="utf-8")
        _make_read_only(self.sealed)

    def trusted(self, db_hashes: dict[str, str]) -> dict[str, str]:
        """The hashes both trusted stores agree on; a disagreement means kloop's own state was touched."""
        if self._manifest_on_disk() != db_hashes:
            raise HarnessFailure(f"{self.trusted_path}: trusted manifest disagrees with the lineage DB")
        return db_hashes

    def _manifest_on_disk(self) -> dict[str, str] | None:
        try:
            return json.loads(self.trusted_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None

    def guard_problems(self, db_hashes: dict[str, str]) -> list[str]:
        """Tampering with kloop's own copies (.kloop/): reported, then repaired from the other store."""
        out: list[str] = []
        if self._manifest_on_disk() != db_hashes:
            out.append(".kloop/manifest.json (kloop's trusted hashes) was modified")
            self.trusted_path.unlink(missing_ok=True)
            self.trusted_path.write_text(json.dumps(db_hashes, indent=1, sort_keys=True), encoding="utf-8")
        if not self.pristine.is_dir() or hash_tree(self.pristine) != db_hashes:
            out.append(".kloop/pristine/ (kloop's copy of the task) was modified")
            if self.sealed.is_dir() and hash_tree(self.sealed, skip={MANIFEST}) == db_hashes:
                remove_tree(self.pristine)
                shutil.copytree(self.sealed, self.pristine, ignore=shutil.ignore_patterns(MANIFEST))
                _make_read_only(self.pristine)
        return out

    def problems(self, trusted: dict[str, str]) -> list[str]:
        """Every way sealed/ differs from the trusted hashes ([] when intact)."""
        if self.sealed.is_symlink() or not self.sealed.is_dir():
            return ["sealed/ was replaced or removed"]
        current = hash_tree(self.sealed, skip={MANIFEST})
        out = [f"sealed/{p} was modified" for p in sorted(trusted) if p in current and current[p] != trusted[p]]
        out += [f"sealed/{p} was removed" for p in sorted(set(trusted) - set(current))]
        out += [f"sealed/{p} was added" for p in sorted(set(current) - set(trusted))]
        manifest = self.sealed / MANIFEST
        try:
            if json.loads(manifest.read_text(encoding="utf-8")) != trusted:
                out.append("sealed/manifest.json was modified")
        except (OSError, json.JSONDecodeError):
            out.append("sealed/manifest.json was modified or removed")
        return out

    def restore(self, trusted: dict[str, str]) -> None:
        """Rebuild sealed/ from the pristine copy (itself checked against the trusted hashes)."""
        if hash_tree(self.pristine) != trusted:
            raise HarnessFailure(f"{self.pristine}: the pristine copy no longer matches the trusted hashes")
        self._materialize(trusted)
