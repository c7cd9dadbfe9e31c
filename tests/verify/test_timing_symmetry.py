"""Issue #11: the boxes compared are treated alike, so identical code cannot look faster.

The harness's no-op batches (its own cost) once ran in the baseline's box only: three extra
batches of warm-up that the candidate's box never got. On a tiny workload an A/A verification then
read 0.93x on average, with CIs excluding 1.0. Every box must see the same sequence of batches.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import kloop.verify.timed as timed
from kloop.task.load import load_task, write_solution_dir
from kloop.verify import VerifyStatus, verify
from kloop.verify.result import VerifyOptions

TASK = Path(__file__).parent / "tasks" / "rmsnorm_tiny"


def test_every_timed_box_gets_the_same_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, list[tuple[bool, int]]] = defaultdict(list)
    real = timed.BoxSlots.run

    def observed(self: Any, packed: Any, count: int, noop: bool, timeout_s: float) -> Any:
        seen[self.box.label].append((noop, count))
        return real(self, packed, count, noop, timeout_s)

    monkeypatch.setattr(timed.BoxSlots, "run", observed)
    task = load_task(TASK)
    write_solution_dir(task.baseline_or_reference(), tmp_path / "same")
    options = VerifyOptions(device="cpu", heldout=1, rounds=4, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache")
    result = verify(task, tmp_path / "same", options)
    assert result.status is VerifyStatus.PASSED, result.reasons
    assert result.summary.speedup_ci is not None
    assert set(seen) == {"candidate", "baseline"}, seen.keys()
    assert any(noop for noop, _ in seen["baseline"]), "the harness cost was not measured"
    assert seen["candidate"] == seen["baseline"]


def test_the_supervisor_checks_outputs_only_after_the_last_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The float64 reference of a re-checked call once ran right after the candidate's batch, so the
    box timed next started on caches the supervisor had just used; now no box's batch follows it."""
    events: list[str] = []
    real_send, real_reference = timed.BoxSlots.run, timed.WorkloadJudge.reference_outputs

    def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        events.append("batch")
        return real_send(self, *args, **kwargs)

    def reference(self: Any, *args: Any, **kwargs: Any) -> Any:
        events.append("reference")
        return real_reference(self, *args, **kwargs)

    monkeypatch.setattr(timed.BoxSlots, "run", observed)
    monkeypatch.setattr(timed.WorkloadJudge, "reference_outputs", reference)
    task = load_task(TASK)
    write_solution_dir(task.baseline_or_reference(), tmp_path / "same")
    options = VerifyOptions(device="cpu", heldout=1, rounds=4, workloads=1, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache")  # fmt: skip
    result = verify(task, tmp_path / "same", options)
    assert result.status is VerifyStatus.PASSED, result.reasons
    timing = events[events.index("batch"):]  # correctness computed its references before any timing batch
    assert "reference" in timing, "no timed call was re-checked"
    assert "batch" not in timing[timing.index("reference"):], timing
