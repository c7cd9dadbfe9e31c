"""The red team: every attack in tests/verify/redteam/ goes through the real verifier.

Each attack is refused with a reason naming the check that caught it, or (caches and timer tricks,
whose honest path is deliberately 6x slower than the baseline) passes only without a speedup it
did not earn. Honest solutions must pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.verify import VerifyOptions, VerifyResult, VerifyStatus, verify

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
TASK = HERE / "tasks" / "rmsnorm_tiny"
S = VerifyStatus

# attack dir -> (accepted statuses, checks of which at least one must have failed, needs timing)
REFUSED: dict[str, tuple[set[VerifyStatus], set[str], bool]] = {
    "attack_nan_everywhere": ({S.INCORRECT_NUMERICAL}, {"finite"}, False),
    "attack_nan_one_element": ({S.INCORRECT_NUMERICAL}, {"finite"}, False),
    "attack_inf_one_element": ({S.INCORRECT_NUMERICAL}, {"finite"}, False),
    "attack_uninitialized_dps": ({S.INCORRECT_NUMERICAL}, {"outputs_written"}, False),
    "attack_uninitialized_partial": ({S.INCORRECT_NUMERICAL}, {"outputs_written"}, False),
    "attack_stale_empty": ({S.INCORRECT_NUMERICAL}, {"numeric", "finite", "determinism"}, False),
    # right for the first 8 calls: the input-coverage runs (or, without them, the re-checked timed outputs) see the rest
    "attack_first_n_correct": ({S.REJECTED, S.INCORRECT_NUMERICAL}, {"timed_outputs", "numeric"}, True),
    # stale on 1 call in 4 of the timing loop only: caught because small outputs are all re-checked
    "attack_sporadic_garbage": ({S.REJECTED}, {"timed_outputs"}, True),
    "attack_every_other_call": ({S.INCORRECT_NUMERICAL}, {"determinism"}, False),
    "attack_mutate_inputs": ({S.REJECTED}, {"inputs_unmodified"}, False),
    "attack_result_into_input": ({S.REJECTED}, {"inputs_unmodified"}, False),
    "attack_listed_shapes_only": ({S.INCORRECT_NUMERICAL}, {"heldout"}, False),
    "attack_low_precision": ({S.INCORRECT_NUMERICAL}, {"numeric"}, False),
    "attack_wrong_dtype": ({S.INCORRECT_DTYPE}, {"dtype"}, False),
    "attack_wrong_shape": ({S.INCORRECT_SHAPE}, {"shape"}, False),
    # its thread writes the outputs 2 ms after the reply: read before that, they are wrong (outputs_written);
    # read after, the thread that did the work is flagged (background_threads). Load decides which; both refuse.
    "attack_background_thread": ({S.REJECTED, S.INCORRECT_NUMERICAL}, {"background_threads", "outputs_written"}, False),
    "attack_tensor_subclass": ({S.REJECTED}, {"exact_type"}, False),
    "attack_meta_tensor": ({S.REJECTED}, {"exact_type"}, False),
    "attack_sys_exit": ({S.RUNTIME_ERROR}, {"runtime"}, False),
    "attack_os_exit": ({S.RUNTIME_ERROR}, {"runtime"}, False),
    "attack_segfault": ({S.RUNTIME_ERROR}, {"runtime"}, False),
    "attack_hang": ({S.TIMEOUT}, {"timeout"}, False),
    "attack_memory_bomb": ({S.RUNTIME_ERROR}, {"runtime", "memory"}, False),
    "attack_forged_stdout": ({S.INCORRECT_NUMERICAL}, {"numeric"}, False),
    "attack_forged_fds": ({S.REJECTED}, {"protocol"}, False),
    "attack_gc_scan": ({S.INCORRECT_NUMERICAL}, {"numeric", "outputs_written"}, False),
    "attack_read_task_files": ({S.REJECTED, S.COMPILE_ERROR}, {"sandbox_policy", "build"}, False),
    "attack_import_kloop_reference": ({S.REJECTED}, {"sandbox_policy"}, False),
    # libc open/readdir through ctypes, around the audit hook: Landlock answers EACCES, the import fails
    "attack_ctypes_read_task": ({S.COMPILE_ERROR, S.REJECTED}, {"build", "sandbox_policy"}, False),
    "attack_exit_at_import": ({S.RUNTIME_ERROR}, {"runtime"}, False),
    "attack_raise": ({S.RUNTIME_ERROR}, {"runtime"}, False),
    "broken_import": ({S.COMPILE_ERROR}, {"build"}, False),
}

# Caches and timer tricks: either refused by the named checks or passed with no unearned speedup.
NO_UNEARNED_SPEEDUP: dict[str, set[str]] = {
    "attack_cache_pointer": {"timed_outputs", "determinism", "numeric"},
    "attack_cache_values": {"timed_outputs", "determinism", "numeric"},
    "attack_cache_shape": {"timed_outputs", "heldout", "numeric"},
    # the supervisor's side decides latency: a patched in-process clock changes only the sandbox's own report
    "attack_timer_patch_harness": {"wall_clock", "physics_floor"},
    "attack_timer_patch_time": {"wall_clock", "physics_floor"},
    "attack_timer_patch_cuda_event": {"wall_clock", "physics_floor"},
}

# a call limit of its own: the memory bomb fills 256 MB blocks page by page up to the 2 GB limit, ~5 s
# of a call on a quiet 2-core VM and past the 10 s limit at CI load (TIMEOUT: refused, but not by the
# memory limit this attack is here to test)
CALL_LIMIT_S = {"attack_memory_bomb": 90.0}

HONEST = sorted(p.name for p in REDTEAM.iterdir() if p.name.startswith("honest_"))


def redteam_options(tmp_path: Path, *, timing: bool) -> VerifyOptions:
    return VerifyOptions(device="cpu", timing=timing, speedup=timing, timeout_s=10, build_timeout_s=60,
                         memory_limit_mb=2048, iterations=2, rounds=8, warmup=1, recheck=4,
                         log_dir=tmp_path / "logs", cache_dir=tmp_path.parent / "kloop-verify-build-cache",
                         prestart=True)  # fmt: skip


def run_solution(name: str, tmp_path: Path, *, timing: bool) -> VerifyResult:
    options = redteam_options(tmp_path, timing=timing)
    if name in CALL_LIMIT_S:
        options = options.model_copy(update={"timeout_s": CALL_LIMIT_S[name]})
    return verify(load_task(TASK), REDTEAM / name, options)


def test_redteam_has_enough_genuine_attacks() -> None:
    attacks = [p for p in REDTEAM.iterdir() if p.name.startswith("attack_")]
    assert len(attacks) >= 25
    assert {p.name for p in attacks} == {k for k in [*REFUSED, *NO_UNEARNED_SPEEDUP] if k.startswith("attack_")}
    assert len(HONEST) >= 5


@pytest.mark.parametrize("attack", sorted(REFUSED))
def test_attack_is_refused_naming_the_check(attack: str, tmp_path: Path) -> None:
    statuses, checks, timing = REFUSED[attack]
    result = run_solution(attack, tmp_path, timing=timing)
    failed = set(result.failed_checks())
    assert result.status in statuses, (result.status, result.reasons)
    assert failed & checks, (failed, result.reasons)
    assert not result.passed
    assert any(reason.split(":")[0] in checks for reason in result.reasons), result.reasons


@pytest.mark.parametrize("attack", sorted(NO_UNEARNED_SPEEDUP))
def test_cache_and_timer_tricks_earn_no_speedup(attack: str, tmp_path: Path) -> None:
    """A trick that passes must not show a gain: its estimate is below 1 and its interval does not lie above 1.

    The interval's upper end used to be held below 1 as well (the honest path costs 6 baseline
    computations), but on rmsnorm_tiny the hand-off dominates a call, and in a full suite run at load
    13 a 6x slower path read 0.73-0.93x with intervals reaching 1.01-1.26: showing a loss is not what
    the attack must fail at; showing a gain is."""
    result = run_solution(attack, tmp_path, timing=True)
    if result.passed:
        assert result.summary.speedup_geomean is not None, result.summary
        assert result.summary.speedup_geomean < 1.0, result.summary
        assert result.summary.speedup_ci[0] < 1.0, result.summary
    else:
        assert set(result.failed_checks()) & NO_UNEARNED_SPEEDUP[attack], result.reasons


@pytest.mark.parametrize("honest", HONEST)
def test_honest_solution_passes(honest: str, tmp_path: Path) -> None:
    result = run_solution(honest, tmp_path, timing=honest in ("honest_dps", "honest_value"))
    assert result.passed, result.reasons
    assert all(c.passed for c in result.checks)
    # on the declared inputs; input-coverage workloads scale w too (x 2^7 at `wide`), so their absolute errors grow with y
    declared = [w for w in result.workloads if not w.uuid.startswith("heldout-coverage-")]
    assert all(w.max_abs_error is not None and w.max_abs_error < 1e-4 for w in declared)


@pytest.mark.slow
def test_honest_solutions_are_never_falsely_rejected_over_20_verifications() -> None:
    """bench/false_reject.py's count, as a test: 20 verifications of each honest solution, timing on."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("false_reject", HERE.parents[1] / "bench" / "false_reject.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rejects, total, reasons = module.count_false_rejects(20, timing=True)
    assert total == 20 * len(HONEST)
    assert rejects == 0, reasons
