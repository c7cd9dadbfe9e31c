"""Issue 26 item 4: a timing batch is sized from every box's measured call, not the candidate's alone.

Sized from the candidate's call only, a naive baseline's batch lasted many times the 2 ms target
(examples/rmsnorm, 17 tokens: 32 calls of a 0.45 ms row loop beside a 40 us candidate), and most
of a verification's timing was the baseline's surplus calls. The count is the same for every box
(the pairing and the A/A symmetry are unchanged); the fastest box still gets at least
`FAST_BATCH_S` of calls, and no batch gets more calls than the candidate-only size.
"""

from __future__ import annotations

from pathlib import Path

from kloop.task.load import load_task
from kloop.task.shapes import resolve_axes
from kloop.verify.checks import CheckBook
from kloop.verify.timed import FAST_BATCH_S, MAX_ITERATIONS, TARGET_BATCH_S, TimingPlan, batch_size
from kloop.verify.workload import WorkloadJudge

EXAMPLE = Path(__file__).parents[2] / "examples" / "rmsnorm"


def _sized(candidate_ns: int, calls_ns: list[float] | None, iterations: int = 2) -> int:
    task = load_task(EXAMPLE)
    judge = WorkloadJudge(task, CheckBook(), seed=1, dps=True)
    workload = task.workloads[1]
    inputs, axes = judge.inputs_for(workload)
    assert axes == resolve_axes(task.definition, workload)
    judge.call_ns[workload.uuid] = candidate_ns
    plan = TimingPlan(device="cpu", rounds=16, iterations=iterations, warmup=3, recheck=3, timeout_s=60, seed=1)
    return batch_size(judge, plan, workload.uuid, axes, inputs, calls_ns)


def test_a_slow_baseline_sets_the_count_and_the_fast_box_keeps_its_floor() -> None:
    before = _sized(40_000, None)  # the candidate-only size (what every box got before)
    assert before == MAX_ITERATIONS
    after = _sized(40_000, [40_000, 450_000])
    assert after == 8  # 0.32 ms of the candidate, 3.6 ms of the baseline (32 calls: 14.4 ms before)
    assert after * 450_000 < before * 450_000 / 2
    assert after * 40_000 >= FAST_BATCH_S * 1e9


def test_sizing_never_exceeds_the_candidate_only_size_nor_drops_below_the_least_calls() -> None:
    before = _sized(200_000, None)
    assert before == int(TARGET_BATCH_S * 1e9 / 200_000)
    assert _sized(200_000, [1_000, 1_000]) == before  # fast warm-ups cannot grow a batch past its slots
    assert _sized(200_000, [600_000, 1_500_000], iterations=2) == 2  # the slowest call is under the target
    assert _sized(200_000, [600_000, 1_500_000], iterations=3) == 3


def test_a_call_longer_than_the_target_is_a_batch_of_its_own() -> None:
    """A second 50 ms call only doubled the slow box's share of the timing; the fast box's floor stays."""
    assert _sized(200_000, [600_000, 50_000_000], iterations=2) == 1
    assert _sized(200_000, [600_000, 50_000_000], iterations=3) == 1
    assert _sized(200_000, [100_000, 50_000_000], iterations=2) == 3  # 3 x 0.1 ms = FAST_BATCH_S


def test_boxes_as_fast_as_the_candidate_keep_the_candidate_only_size() -> None:
    assert _sized(100_000, [100_000, 100_000]) == _sized(100_000, None)
