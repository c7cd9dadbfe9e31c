"""Issue 26 item 4: the baseline's box builds and imports while the candidate's correctness runs.

Loaded after correctness, the baseline's build and import (about 0.3 s for a Python baseline on a
quiet machine) added to every verification's wall time. Now a background thread loads it as soon
as the candidate's code has loaded; timing joins it first, so no timed batch overlaps the load.
A candidate that fails before timing leaves no load behind: clean-up kills the box and joins it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kloop.task.load import load_task, write_solution_dir
from kloop.verify import VerifyStatus, verify
from kloop.verify.process import SandboxProcess
from kloop.verify.result import VerifyOptions

HERE = Path(__file__).parent
TASK = HERE / "tasks" / "rmsnorm_tiny"


def _options(tmp_path: Path) -> VerifyOptions:
    return VerifyOptions(device="cpu", heldout=1, rounds=2, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache")


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    real = SandboxProcess.request

    def observed(self: SandboxProcess, op: str, *args: Any, **kwargs: Any) -> Any:
        events.append((self.label, op))
        return real(self, op, *args, **kwargs)

    monkeypatch.setattr(SandboxProcess, "request", observed)
    return events


def test_the_baseline_loads_while_the_candidate_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _record(monkeypatch)
    task = load_task(TASK)
    write_solution_dir(task.baseline_or_reference(), tmp_path / "same")
    result = verify(task, tmp_path / "same", _options(tmp_path))
    assert result.status is VerifyStatus.PASSED, result.reasons
    assert result.summary.speedup_ci is not None
    baseline_load = events.index(("baseline", "load"))
    last_run = max(i for i, e in enumerate(events) if e == ("candidate", "run"))
    assert events.index(("baseline", "build")) < last_run, events  # before: after the last correctness run
    first_batch = events.index(("candidate", "batch"))
    assert baseline_load < first_batch, events  # timing starts only after the load is done
    assert not [t for t in threading.enumerate() if t.name == "kloop-trusted-load"]


def test_a_rejected_candidate_leaves_no_load_behind(tmp_path: Path) -> None:
    result = verify(load_task(TASK), HERE / "redteam" / "attack_nan_everywhere", _options(tmp_path))
    assert result.status is not VerifyStatus.PASSED, result.reasons
    assert not [t for t in threading.enumerate() if t.name == "kloop-trusted-load"]
