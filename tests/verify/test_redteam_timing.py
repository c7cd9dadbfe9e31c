"""Issue #8 items 2 and 3: nothing inside the candidate's process decides latency, inputs are independent.

Attacks in tests/verify/redteam/timing/ reach the harness in their own process (its clock, its
no-op batches, the channel's send) through gc. Latency is decided on the supervisor's side (the
sandbox cgroup's CPU time or the supervisor's clock around a batch whose inputs arrive and whose
outputs leave inside it), so they are refused or earn nothing: their honest path is 6x slower
than the baseline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.verify import VerifyStatus, verify
from kloop.verify.checks import CheckBook
from kloop.verify.timed import fresh_calls
from kloop.verify.workload import WorkloadJudge
from tests.verify.test_redteam import TASK, redteam_options

TIMING = Path(__file__).parent / "redteam" / "timing"
NO_GAIN = {"attack_timer_window_edge", "attack_calibration_inflate"}


def test_work_finished_lazily_is_caught_in_the_timed_outputs(tmp_path: Path) -> None:
    result = verify(load_task(TASK), TIMING / "attack_lazy_outputs", redteam_options(tmp_path, timing=True))
    assert result.status is VerifyStatus.REJECTED, result.reasons
    assert "timed_outputs" in result.failed_checks(), result.reasons


@pytest.mark.parametrize("attack", sorted(NO_GAIN))
def test_reaching_the_in_process_harness_earns_no_speedup(attack: str, tmp_path: Path) -> None:
    result = verify(load_task(TASK), TIMING / attack, redteam_options(tmp_path, timing=True))
    if result.passed:
        assert result.summary.speedup_ci is not None, result.summary
        assert result.summary.speedup_ci[1] < 1.0, result.summary  # the 6x slower honest path shows
    else:
        assert set(result.failed_checks()) & {"wall_clock", "physics_floor", "timed_outputs"}, result.reasons


def test_timed_calls_get_independent_inputs_not_moved_copies_of_one_tensor() -> None:
    task = load_task(TASK)
    judge = WorkloadJudge(task, CheckBook(), seed=1234, dps=True)
    calls = fresh_calls(judge, task.workloads[0], "round0", 6)
    for name in ("x", "w"):
        values = [tuple(sorted(c[name].flatten().tolist())) for c in calls]
        assert len(set(values)) == len(values), name  # no call's tensor is a permutation (a roll) of another's
    again = fresh_calls(judge, task.workloads[0], "round0", 6)
    assert all(c["x"].equal(a["x"]) for c, a in zip(calls, again, strict=True))  # the supervisor can rebuild them
