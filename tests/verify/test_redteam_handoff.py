"""Issue 29 item 2 and issue 26 item 3: timed calls are handed over one by one, measured outside.

Each attack prints a `KLOOP-ATTACK` line into its sandbox's log when its trick ran; every test
asserts that line, so no hold is vacuous. Their honest paths are 6x slower than the baseline (or
sleep), so any speedup could only come from the trick.
"""

from __future__ import annotations

import time
from pathlib import Path

from kloop.task.load import load_task
from kloop.verify import VerifyResult, VerifyStatus, verify
from tests.verify.test_redteam import TASK, redteam_options

TIMING = Path(__file__).parent / "redteam" / "timing"


def _verify(attack: str, tmp_path: Path) -> tuple[VerifyResult, str]:
    options = redteam_options(tmp_path, timing=True).model_copy(update={"prestart": False})
    result = verify(load_task(TASK), TIMING / attack, options)
    log = (tmp_path / "logs" / "candidate.log").read_text(errors="replace")
    return result, log


def _no_speedup(result: VerifyResult) -> None:
    """No gain shown: estimate below 1, interval not above 1 (a harness-bound tiny call under load read a
    6x slower path as 0.78x with an interval up to 1.11, so the upper end is not held below 1)."""
    if result.passed:
        assert result.summary.speedup_ci is not None, result.summary
        assert result.summary.speedup_geomean is not None and result.summary.speedup_geomean < 1.0, result.summary
        assert result.summary.speedup_ci[0] < 1.0, result.summary
    else:
        assert result.summary.speedup_geomean is None, result.summary


def test_fusing_a_batch_finds_only_the_call_at_hand(tmp_path: Path) -> None:
    result, log = _verify("attack_fuse_batch", tmp_path)
    lines = [line for line in log.splitlines() if line.startswith("KLOOP-ATTACK fuse: saw")]
    assert lines, log[-2000:]  # the trick ran: it found the harness's slots
    assert all("cache hits 0" in line for line in lines), lines  # nothing it fused was ever the next call
    assert "KLOOP-ATTACK fuse: cache hits" not in log, log[-2000:]
    _no_speedup(result)


def test_replacing_the_batch_loop_earns_nothing(tmp_path: Path) -> None:
    """Saying `done` before the work is a race with the supervisor's copy of the slot at `done`.

    Where the supervisor copies first, the outputs are poison: REJECTED (`timed_outputs`). Where the
    box finishes the work before the supervisor is scheduled (under load on the shared core it often
    does: the full suite saw PASSED), the copy holds correct outputs and the box's CPU time holds
    the work: no speedup. Either way the trick earns nothing; this test once demanded REJECTED
    alone, which only the scheduler's choice decided.
    """
    result, log = _verify("attack_replace_batch_handler", tmp_path)
    assert "KLOOP-ATTACK handler: replaced batch loop ran" in log, log[-2000:]
    _no_speedup(result)
    assert result.status in (VerifyStatus.PASSED, VerifyStatus.REJECTED), result.reasons
    if result.status is VerifyStatus.REJECTED:  # outputs read at `done` were not written yet
        assert "timed_outputs" in result.failed_checks(), result.reasons


def test_inflating_the_no_op_batches_earns_nothing(tmp_path: Path) -> None:
    result, log = _verify("attack_calibration_inflate", tmp_path)
    assert "KLOOP-ATTACK calibration: burned" in log, log[-2000:]
    _no_speedup(result)


def test_clobbering_inputs_only_in_timed_calls_is_caught(tmp_path: Path) -> None:
    result, log = _verify("attack_clobber_timed_inputs", tmp_path)
    assert "KLOOP-ATTACK clobber: zeroed the input of a timed call" in log, log[-2000:]
    assert result.status is VerifyStatus.REJECTED, result.reasons
    assert "inputs_unmodified" in result.failed_checks(), result.reasons


def test_a_sleeping_candidate_is_flagged(tmp_path: Path) -> None:
    result, _ = _verify("attack_sleep", tmp_path)
    assert result.status is VerifyStatus.REJECTED, result.reasons
    assert "off_cpu" in result.failed_checks(), result.reasons
    check = result.check("off_cpu")
    assert check is not None and "sleeps" in check.detail and "understate" in check.detail, check
    assert "second timing" in check.detail, check  # a sleeper sleeps through the confirming timing too


def test_a_box_that_dies_in_a_timed_call_is_caught_at_once(tmp_path: Path) -> None:
    """Its end of the `done` pipe closes with it: EOF, not a wait for the call's time limit (60 s here)."""
    options = redteam_options(tmp_path, timing=True).model_copy(update={"prestart": False, "timeout_s": 60})
    start = time.monotonic()
    result = verify(load_task(TASK), TIMING / "attack_exit_in_timed_call", options)
    took = time.monotonic() - start
    log = (tmp_path / "logs" / "candidate.log").read_text(errors="replace")
    assert "KLOOP-ATTACK exit: leaving in a timed call" in log, log[-2000:]
    assert result.status is VerifyStatus.RUNTIME_ERROR, result.reasons
    assert any("closed the hand-off during timed call" in r for r in result.reasons), result.reasons
    assert took < 60, took


def test_a_host_stall_through_one_timing_rejects_no_honest_kernel(tmp_path: Path) -> None:
    """CI at load 10 read an honest rmsnorm 1.2 ms per call "asleep" more than its baseline and
    rejected it (off_cpu). Here the stall is real (3 ms per call through the first workload's first
    timing only): the workload is timed again and judged on the second timing."""
    result, log = _verify("honest_stalled_first_timing", tmp_path)
    assert "KLOOP-STALL first timing stalled" in log, log[-2000:]
    assert result.passed, result.reasons
    check = result.check("off_cpu")
    assert check is not None and "timed twice" in check.detail, check


def test_latency_and_speedup_agree_in_the_verdict(tmp_path: Path) -> None:
    from kloop.task.load import write_solution_dir

    task = load_task(TASK)
    write_solution_dir(task.baseline_or_reference(), tmp_path / "same")
    options = redteam_options(tmp_path, timing=True)
    result = verify(task, tmp_path / "same", options)
    assert result.passed, result.reasons
    timed = [w for w in result.workloads if not w.heldout and w.status is VerifyStatus.PASSED]
    assert timed, result.workloads
    for w in timed:
        assert w.wall_ms is not None and w.harness_ms is not None
        if w.harness_bound:  # flagged and said why, but still timed: the hand-off is in both boxes' costs
            assert w.timing_note and "harness-bound" in w.timing_note, w
        assert w.speedup is not None and w.baseline_latency_ms is not None and w.latency_ms is not None
        assert abs(w.speedup - w.baseline_latency_ms / w.latency_ms) < 1e-9 * w.speedup, w
        assert w.speedup_ci is not None and w.speedup_ci[0] <= w.speedup <= w.speedup_ci[1], w
    assert result.summary.interval and "trimmed mean" in result.summary.interval
    from kloop.verify.trace import to_traces

    for line in to_traces(result, task):
        perf = line["evaluation"].get("performance")
        if perf and perf["latency_ms"] > 0:  # the exported trace: the same definition, the same ratio
            assert abs(perf["speedup_factor"] - perf["reference_latency_ms"] / perf["latency_ms"]) < 1e-9 * perf["speedup_factor"]
