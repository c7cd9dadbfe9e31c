"""The shared build cache: the sandbox only reads it, entries are hash-checked on every load, and
a build is published by the supervisor after the sandbox is dead, only if it is what was compiled.

Each attack in tests/verify/redteam/cache/ runs through the real verifier against a cache that an
honest verification has already warmed (the baseline's entry included), and each test then checks
what the attack was after: the cache's bytes, and the verification that follows it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from kloop.builder import BuildCache
from kloop.builder.cache import MANIFEST, hash_tree
from kloop.task.load import load_task
from kloop.verify import VerifyOptions, VerifyResult, VerifyStatus, verify

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
TASK = HERE / "tasks" / "rmsnorm_tiny"
S = VerifyStatus


def _options(cache: Path, logs: Path, *, timing: bool = False) -> VerifyOptions:
    return VerifyOptions(device="cpu", timing=timing, speedup=timing, timeout_s=20, build_timeout_s=60,
                         memory_limit_mb=2048, iterations=4, rounds=2, warmup=1, recheck=2, workloads=1,
                         log_dir=logs, cache_dir=cache, prestart=True)  # fmt: skip


def _run(solution: Path, cache: Path, tmp_path: Path, *, timing: bool = False) -> VerifyResult:
    return verify(load_task(TASK), solution, _options(cache, tmp_path / f"logs-{solution.name}", timing=timing))


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under the cache (lock files aside) with its sha256."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(".lock"):
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache an honest verification with timing filled: the candidate's and the baseline's entries."""
    root = tmp_path_factory.mktemp("warm")
    result = _run(REDTEAM / "honest_value", root / "cache", root, timing=True)
    _correct_and_timed(result)
    assert len(list((root / "cache").rglob(MANIFEST))) == 2, "candidate and baseline entries expected"
    return root / "cache"


def _correct_and_timed(result: VerifyResult) -> None:
    """Correct, and the baseline was loaded for timing (timing audits under heavy load are not this file's subject)."""
    timing_audits = {"wall_clock", "physics_floor", "timed_outputs"}
    assert not set(result.failed_checks()) - timing_audits, result.reasons
    assert result.summary.timing_note is None or "baseline" not in result.summary.timing_note, result.summary


# -- the cache itself ------------------------------------------------------------------------
def _entry(tmp_path: Path) -> tuple[BuildCache, str, Path]:
    cache = BuildCache(tmp_path / "cache")
    key = "ab" * 32

    def compile_into(staging: Path) -> dict:
        (staging / "src").mkdir()
        (staging / "src" / "kernel.py").write_text("def run(x):\n    return x\n")
        return {"language": "python", "src": "src"}

    entry, manifest, hit = cache.ensure(key, compile_into)
    assert not hit and manifest["files"] == {"src/kernel.py": hashlib.sha256(b"def run(x):\n    return x\n").hexdigest()}
    return cache, key, entry


@pytest.mark.parametrize("tamper", ["edit", "add", "remove", "symlink", "manifest_key"])
def test_an_entry_that_does_not_hash_as_listed_is_a_miss(tamper: str, tmp_path: Path) -> None:
    cache, key, entry = _entry(tmp_path)
    assert cache.manifest(key) is not None
    if tamper == "edit":
        (entry / "src" / "kernel.py").write_text("def run(x):\n    return x * 0\n")
    elif tamper == "add":
        (entry / "src" / "helpers.py").write_text("import os\n")
    elif tamper == "remove":
        (entry / "src" / "kernel.py").unlink()
    elif tamper == "symlink":
        (entry / "src" / "kernel.py").unlink()
        (entry / "src" / "kernel.py").symlink_to(tmp_path / "elsewhere.py")
    else:
        manifest = json.loads((entry / MANIFEST).read_text())
        (entry / MANIFEST).write_text(json.dumps({**manifest, "key": "cd" * 32}))
    assert cache.manifest(key) is None and key in cache.refused
    # the next trusted build replaces it rather than loading it
    _, manifest, hit = cache.ensure(key, lambda staging: (staging / "kernel.so").write_text("fresh") and {})
    assert not hit and set(manifest["files"]) == {"kernel.so"}


def test_publish_takes_only_what_was_compiled(tmp_path: Path) -> None:
    staging = BuildCache(tmp_path / "cache", staging=tmp_path / "private")
    key = "ef" * 32
    staged, manifest, hit = staging.ensure(key, lambda d: (d / "kernel.py").write_text("ok") and {"src": "."})
    assert not hit and staged.is_relative_to(tmp_path / "private") and not (tmp_path / "cache").exists()
    shared = BuildCache(tmp_path / "cache")
    (staged / "kernel.py").write_text("tampered")
    assert "kernel.py changed" in (shared.publish(staged, manifest) or "")
    assert shared.manifest(key) is None
    (staged / "kernel.py").write_text("ok")
    assert shared.publish(staged, manifest) is None
    assert shared.manifest(key) is not None and hash_tree(shared.entry_dir(key)) == manifest["files"]
    assert BuildCache(tmp_path / "cache", staging=tmp_path / "other").ensure(key, pytest.fail)[2] is True


# -- attacks through the verifier, and the verification that follows ---------------------------
@pytest.mark.parametrize(("name", "statuses"), [
    ("attack_cache_edit_python", {S.REJECTED}),  # the audit hook refuses the write and records it
    ("attack_cache_edit_ctypes", {S.PASSED}),  # Landlock answers EACCES: nothing changes, nothing to refuse
    ("attack_cache_plant", {S.REJECTED, S.PASSED}),
])  # fmt: skip
def test_shared_cache_attacks_change_nothing_later_verifications_load(name: str, statuses: set[VerifyStatus],
                                                                      warm_cache: Path, tmp_path: Path) -> None:  # fmt: skip
    before = _snapshot(warm_cache)
    assert any(p.endswith("/src/main.py") for p in before), "the baseline's (the reference's) entry should be warm"
    result = _run(REDTEAM / "cache" / name, warm_cache, tmp_path)
    assert result.status in statuses, result.reasons
    if result.status is S.REJECTED:
        assert any(r.startswith("sandbox_policy") for r in result.reasons), result.reasons
    after = _snapshot(warm_cache)
    assert {k: v for k, v in after.items() if k in before} == before, "an existing entry changed"
    own = (REDTEAM / "cache" / name / "kernel.py").read_bytes()
    for rel in set(after) - set(before):  # only the attack's own build (its real source) may have been published
        assert rel.endswith(MANIFEST) or (warm_cache / rel).read_bytes() == own, rel
    follow = _run(REDTEAM / "honest_value", warm_cache, tmp_path, timing=True)
    _correct_and_timed(follow)  # the baseline loaded from its intact, hash-checked entry
    assert _snapshot(warm_cache) == after  # the follow-up found every entry intact (nothing rebuilt)


@pytest.mark.parametrize("name", ["attack_cache_own_build", "attack_cache_own_build_add"])
def test_a_build_changed_after_staging_is_refused_and_never_published(name: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for attempt in range(2):  # the second verification must not be handed the first one's tampered build
        result = _run(REDTEAM / "cache" / name, cache, tmp_path / str(attempt))
        assert result.status is S.REJECTED, result.reasons
        assert any(r.startswith("sandbox_policy") and "changed after it was compiled" in r for r in result.reasons), \
            result.reasons
        entries = [p.parent for p in cache.rglob(MANIFEST)]
        assert all((e / "src" / "kernel.py").read_text().count("tampered") == 0 for e in entries if (e / "src").exists())
        assert not any((e / "src" / "helpers.py").exists() or (e / "src" / "extra_module.py").exists() for e in entries)


def test_honest_build_is_published_with_per_file_hashes_and_reused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(REDTEAM / "honest_value", cache, tmp_path / "a")
    assert first.passed, first.reasons
    manifests = list(cache.rglob(MANIFEST))
    assert len(manifests) == 1
    entry = manifests[0].parent
    manifest = json.loads(manifests[0].read_text())
    assert manifest["files"] == hash_tree(entry) and "src/kernel.py" in manifest["files"]
    stamp = os.stat(manifests[0]).st_mtime_ns
    second = _run(REDTEAM / "honest_value", cache, tmp_path / "b")
    assert second.passed, second.reasons
    assert os.stat(manifests[0]).st_mtime_ns == stamp and list(cache.rglob(MANIFEST)) == manifests
