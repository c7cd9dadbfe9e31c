"""The embedded local pool, for real: slot processes, the real verifier, a slot killed mid-job."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from tests.pool.conftest import FAST, SILU, SLOW, VECTORIZED, judged

from kloop.errors import HarnessFailure
from kloop.pool.bundle import Bundle
from kloop.pool.job import POOL_ENV_KEY, OutcomeKind, VerifyJob
from kloop.pool.local import LocalPool, cpu_sets
from kloop.pool.verifier import job_options


def test_bundle_is_content_addressed_and_checked(tmp_path: Path) -> None:
    one = Bundle.from_dir(VECTORIZED)
    two = Bundle.from_dir(VECTORIZED)
    assert one.digest == two.digest and "main.py" in one.files
    copy = one.materialize(tmp_path / "copy")
    assert Bundle.from_dir(copy).digest == one.digest
    forged = one.model_copy(update={"files": {**one.files, "main.py": "aW1wb3J0IG9z"}})  # "import os"
    with pytest.raises(HarnessFailure, match="do not hash"):
        forged.materialize(tmp_path / "forged")
    escape = Bundle(digest="", files={"../out.txt": "eA=="})
    escape = escape.model_copy(update={"digest": __import__("kloop.pool.bundle").pool.bundle.digest_of({"../out.txt": b"x"})})
    with pytest.raises(HarnessFailure, match="leaves the bundle"):
        escape.materialize(tmp_path / "escape")
    assert not (tmp_path / "out.txt").exists()


def test_cpu_sets_split_and_wrap() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    assert cpu_sets(1) == [cpus]
    sets = cpu_sets(len(cpus) * 2)  # more slots than CPUs: they share, round-robin
    assert len(sets) == len(cpus) * 2 and all(len(s) == 1 for s in sets)


def _job(job_id: str, solution: Path, options: dict[str, Any] = FAST) -> VerifyJob:
    return VerifyJob(id=job_id, task=Bundle.from_dir(SILU), solution=Bundle.from_dir(solution),
                     options=job_options("cpu", options, True, 1))


def test_local_pool_verifies_and_names_the_worker() -> None:
    with LocalPool(device="cpu", slots=1) as pool:
        outcome = pool.submit(_job("a", VECTORIZED)).result(timeout=300)
    assert outcome.kind is OutcomeKind.verdict, outcome.error
    result = outcome.verify_result()
    assert judged(result)
    assert result.environment[POOL_ENV_KEY].startswith("local:") and "/slot0/cpu:" in result.environment[POOL_ENV_KEY]
    assert outcome.attempts == 1 and outcome.lost == []


def test_killed_slot_requeues_its_candidate() -> None:
    with LocalPool(device="cpu", slots=1) as pool:
        future = pool.submit(_job("slow", VECTORIZED, SLOW))
        deadline = time.monotonic() + 120
        while "slow" not in pool.busy() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # inside the verification, not before it
        pid = pool.busy()["slow"]
        os.kill(pid, signal.SIGKILL)
        outcome = future.result(timeout=600)
    assert outcome.attempts == 2, outcome
    assert f"pid {pid}" in outcome.lost[0] and "died" in outcome.lost[0]
    assert outcome.kind is OutcomeKind.verdict, outcome.error  # judged on the restarted slot, not rejected
    assert judged(outcome.verify_result())


def test_device_label_names_the_visible_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ray actor with num_gpus=1 sees CUDA_VISIBLE_DEVICES on an NVIDIA node and HIP_VISIBLE_DEVICES on an
    AMD one; a `--device gpu` pool cannot tell which from the driver, so the label reads the worker's."""
    from kloop.pool.job import device_label

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "3")
    assert device_label("gpu") == device_label("cuda") == device_label("rocm") == "rocm:3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.delenv("HIP_VISIBLE_DEVICES")
    assert device_label("cuda") == "cuda:1" and device_label("rocm") == "rocm:all"
