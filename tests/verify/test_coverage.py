"""Input coverage: a kernel right only on the declared [0, 1) must fail; honest kernels still pass.

The tasks in tests/verify/tasks/{relu,softmax,rmsnorm,matmul}_unit declare their inputs uniform in
[0, 1), as a KernelBench import does. The attacks in tests/verify/redteam/coverage/ are exact on
that range and wrong elsewhere (ReLU as the identity, softmax without max-subtraction, RMSNorm with
eps outside the square root, ...).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.task.inputs import make_inputs
from kloop.task.load import load_task
from kloop.task.regimes import COVERAGE_REGIMES, coverage_inputs
from kloop.verify import VerifyOptions, VerifyResult, VerifyStatus, verify

HERE = Path(__file__).parent
COVERAGE = HERE / "redteam" / "coverage"
TASKS = HERE / "tasks"
S = VerifyStatus

ATTACKS = sorted(f"{p.parent.name}/{p.name}" for p in COVERAGE.glob("*/attack_*") if p.parent.name != "relu_narrowed")
HONEST = sorted(f"{p.parent.name}/{p.name}" for p in COVERAGE.glob("*/honest_*"))


def _verify(task: str, solution: str, tmp_path: Path) -> VerifyResult:
    options = VerifyOptions(device="cpu", timing=False, speedup=False, timeout_s=20, build_timeout_s=60,
                            memory_limit_mb=2048, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache",
                            prestart=True)  # fmt: skip
    return verify(load_task(TASKS / task), COVERAGE / solution, options)


def test_the_declared_inputs_alone_would_pass_every_attack() -> None:
    """The premise: on [0, 1) each attack is exact, so only coverage can catch it."""
    import torch

    from kloop.task.reference import load_reference

    for name in ATTACKS:
        task_name, attack = name.split("/")
        task = load_task(TASKS / task_name)
        workload = task.workloads[0]
        inputs = make_inputs(task.definition, workload, seed=1234)
        assert all(float(v.min()) >= 0 for v in inputs.values())
        namespace: dict = {}
        exec((COVERAGE / name / "kernel.py").read_text(), namespace)
        ref = load_reference(task.definition)(*inputs.values())
        assert torch.allclose(namespace["run"](*inputs.values()), ref, rtol=1e-4, atol=1e-5), attack


@pytest.mark.parametrize("name", ATTACKS)
def test_kernels_right_only_on_the_declared_range_fail(name: str, tmp_path: Path) -> None:
    task, _ = name.split("/")
    result = _verify(task, name, tmp_path)
    assert result.status is S.INCORRECT_NUMERICAL, result.reasons
    assert set(result.failed_checks()) & {"numeric", "finite"}, result.reasons
    assert any("inputs" in r and any(regime in r for regime in COVERAGE_REGIMES) for r in result.reasons), result.reasons


@pytest.mark.parametrize("name", HONEST)
def test_honest_kernels_pass_every_regime(name: str, tmp_path: Path) -> None:
    task, _ = name.split("/")
    result = _verify(task, name, tmp_path)
    assert result.passed, result.reasons
    detail = next(c.detail for c in result.checks if c.name == "numeric")
    assert detail.startswith("coverage: "), detail
    judged = [w.uuid.split("-")[2] for w in result.workloads if w.uuid.startswith("heldout-coverage-")]
    assert judged and set(judged) <= set(COVERAGE_REGIMES), judged


def test_a_task_can_narrow_coverage_with_a_reason(tmp_path: Path) -> None:
    result = _verify("relu_narrowed", "relu_narrowed/attack_relu_identity", tmp_path)
    assert result.passed, result.reasons
    detail = next(c.detail for c in result.checks if c.name == "numeric")
    assert "coverage: none" in detail and "only ever fed probabilities" in detail


def test_regimes_where_the_task_precision_cannot_answer_are_skipped_not_failed(tmp_path: Path) -> None:
    """exp in float32: at `wide` scale the float64 answer is finite but beyond float32, so it is skipped."""
    import json
    import shutil

    task_dir = shutil.copytree(TASKS / "relu_unit", tmp_path / "exp_unit")
    definition = json.loads((task_dir / "definition.json").read_text())
    definition["reference"] = "import torch\n\ndef run(x):\n    return torch.exp(x)\n"
    (task_dir / "definition.json").write_text(json.dumps(definition))
    solution = tmp_path / "honest_exp"
    shutil.copytree(COVERAGE / "relu_unit" / "honest_relu", solution)
    (solution / "kernel.py").write_text("import torch\n\n\ndef run(x):\n    return x.exp()\n")
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache")  # fmt: skip
    result = verify(load_task(task_dir), solution, options)
    assert result.passed, result.reasons
    detail = next(c.detail for c in result.checks if c.name == "numeric")
    assert "wide inputs skipped" in detail, detail


CANCEL = "import torch\n\n\ndef run(x):\n    return (x * x + 0.1) - x * x\n"
"""0.1 in float64; in float32 it cancels: at `wide` scale (|x| up to 128, x*x up to 2^14, an ulp of
2^-9) it errs by up to 1e-3 against a tolerance of 1.1e-4; on [0, 1) and in every other regime
(`shifted`: x*x up to 81) by under 4e-6."""


def _cancelling_task(tmp_path: Path, kernel: str) -> tuple[Path, Path]:
    import json
    import shutil

    task_dir = shutil.copytree(TASKS / "relu_unit", tmp_path / "cancel_unit")
    definition = json.loads((task_dir / "definition.json").read_text())
    definition["reference"] = CANCEL
    (task_dir / "definition.json").write_text(json.dumps(definition))
    solution = tmp_path / "solution"
    shutil.copytree(COVERAGE / "relu_unit" / "honest_relu", solution)
    (solution / "kernel.py").write_text(kernel)
    return task_dir, solution


def test_a_regime_the_reference_cannot_answer_in_its_precision_excuses_an_honest_miss(tmp_path: Path) -> None:
    """The honest float32 kernel misses `wide` exactly as the float32 reference does: asked after the miss,
    the float64 oracle finds the regime ill-conditioned, so it is skipped with that reason, not failed."""
    task_dir, solution = _cancelling_task(tmp_path, CANCEL)
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache")  # fmt: skip
    result = verify(load_task(task_dir), solution, options)
    assert result.passed, result.reasons
    detail = next(c.detail for c in result.checks if c.name == "numeric")
    assert "wide inputs skipped" in detail and "the reference in the task's own precision" in detail, detail
    judged = {w.uuid.split("-")[2] for w in result.workloads if w.uuid.startswith("heldout-coverage-")}
    assert "wide" not in judged and {"signed", "small", "tiny", "special"} <= judged, judged


def test_an_ill_conditioned_regime_does_not_hide_what_is_wrong_whatever_the_inputs(tmp_path: Path) -> None:
    """A kernel that clobbers its input only where the regime is ill-conditioned (|x| > 16: only `wide`).

    When the oracle was asked before the candidate ran, `wide` was skipped unseen and this passed. Now
    the regime is judged first, and only value checks are excused by the oracle: the clobber is caught.
    """
    kernel = CANCEL + "\n\ndef run_and_clobber(x):\n    y = run(x)\n    if float(x.abs().max()) > 16:\n" \
                      "        x.mul_(0.5)\n    return y\n"  # fmt: skip
    task_dir, solution = _cancelling_task(tmp_path, kernel.replace("def run(x)", "def _run(x)")
                                          .replace("y = run(x)", "y = _run(x)").replace("run_and_clobber", "run"))
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache")  # fmt: skip
    result = verify(load_task(task_dir), solution, options)
    assert result.status is S.REJECTED, result.reasons
    assert "inputs_unmodified" in result.failed_checks() and any("wide inputs" in r for r in result.reasons), result.reasons


def test_outputs_left_unwritten_where_a_regime_is_ill_conditioned_are_still_caught(tmp_path: Path) -> None:
    """A regime runs once, so its holes are found from one poison: elements still holding it where
    the reference is not that value. They count as `outputs_written`, which the oracle never excuses:
    this kernel writes nothing at all under `wide`, the regime the oracle excuses value misses on."""
    import json

    kernel = "import torch\n\n\ndef run(x, out):\n    if float(x.abs().max()) <= 16:\n" \
             "        out.copy_((x * x + 0.1) - x * x)\n"  # fmt: skip
    task_dir, solution = _cancelling_task(tmp_path, kernel)
    spec = json.loads((solution / "solution.json").read_text())
    spec["spec"]["destination_passing_style"] = True
    (solution / "solution.json").write_text(json.dumps(spec))
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache")  # fmt: skip
    result = verify(load_task(task_dir), solution, options)
    assert result.status is S.INCORRECT_NUMERICAL, result.reasons
    assert "outputs_written" in result.failed_checks(), result.reasons  # without it, `numeric` alone was excused
    assert any("wide inputs" in r and "never written" in r for r in result.reasons), result.reasons


def test_coverage_inputs_are_signed_seeded_and_respect_declared_only() -> None:
    task = load_task(TASKS / "relu_unit")
    workload = task.workloads[0]
    a = coverage_inputs(task.definition, workload, "signed", seed=7)["x"]
    b = coverage_inputs(task.definition, workload, "signed", seed=7)["x"]
    c = coverage_inputs(task.definition, workload, "signed", seed=8)["x"]
    assert float(a.min()) < 0 < float(a.max()) and bool((a == b).all()) and not bool((a == c).all())
    tiny = coverage_inputs(task.definition, workload, "tiny", seed=7)["x"]
    assert float(tiny.abs().max()) < 1e-3
    special = coverage_inputs(task.definition, workload, "special", seed=7)["x"]
    assert bool((special == 0).any()) and bool((special.abs() == 1).any())
    narrowed = task.definition.model_copy(deep=True)
    from kloop.task.settings import CoverageSpec

    narrowed.settings.coverage = CoverageSpec(declared_only=["x"], reason="x is a probability here")
    kept = coverage_inputs(narrowed, workload, "wide", seed=7)["x"]
    assert float(kept.min()) >= 0 and float(kept.max()) < 1


def test_determinism_message_for_nan_and_inf_outputs() -> None:
    import torch

    from kloop.task.shapes import tolerance_for
    from kloop.verify.compare import disagreement, same

    tol = tolerance_for(load_task(TASKS / "relu_unit").definition, "y")
    nan = torch.full((4,), float("nan"))
    assert same(nan, nan.clone(), tol)[0]  # all-NaN twice is deterministic (finite catches the NaN)
    mixed = torch.tensor([float("nan"), 1.0, 2.0, 3.0])
    assert not same(mixed, torch.tensor([0.5, 1.0, 2.0, 3.0]), tol)[0]
    assert "1 NaN in one run only" in disagreement(mixed, torch.tensor([0.5, 1.0, 2.0, 3.0]), tol)
    assert not same(torch.tensor([float("inf")]), torch.tensor([float("-inf")]), tol)[0]
    assert "max diff 0" not in disagreement(nan, torch.zeros(4), tol)
    assert "4/4 elements differ" in disagreement(nan, torch.zeros(4), tol)


def test_regimes_honour_declared_ranges_and_keep_parameters() -> None:
    """A declared range is the regime's unit; a weight (no var axis) keeps its declared draw."""
    task = load_task(TASKS / "matmul_unit")  # x [batch, k] and w [k, n], both declared in [0, 1)
    workload = task.workloads[0]
    declared = make_inputs(task.definition, workload, seed=7)
    signed = coverage_inputs(task.definition, workload, "signed", seed=7)
    assert float(signed["x"].abs().max()) <= 1.0 and float(signed["x"].min()) < 0  # [-1, 1): the declared magnitude
    for regime in ("wide", "small", "tiny", "shifted", "special"):
        drawn = coverage_inputs(task.definition, workload, regime, seed=7)
        assert bool((drawn["w"] == declared["w"]).all()), regime  # the parameter is not rescaled
    shifted = coverage_inputs(task.definition, workload, "shifted", seed=7)["x"]
    assert 7.0 <= float(shifted.mean()) <= 9.0 and float(shifted.std()) < 1.0  # mean 8 units, spread of one


def test_regime_tolerance_follows_the_output_scale() -> None:
    import torch

    from kloop.task.schema import Tolerance
    from kloop.verify.coverage import regime_tolerance

    tol = Tolerance(atol=1e-2, rtol=1e-2)
    declared = torch.randn(64, dtype=torch.float64)
    shrunk = regime_tolerance(tol, declared * 2.0**-10, declared)
    assert shrunk.atol == pytest.approx(1e-2 * 2.0**-10) and shrunk.rtol == tol.rtol
    assert regime_tolerance(tol, declared * 2.0**7, declared) == tol  # never widened


def test_coverage_runs_on_every_size_class() -> None:
    from kloop.task.schema import Workload
    from kloop.verify.coverage import size_classes

    definition = load_task(TASKS / "rmsnorm_unit").definition
    workloads = [Workload(uuid=f"b{b}", axes={"batch": b}, inputs={}) for b in (64, 1, 3, 4, 2, 17, 20)]
    assert [w.uuid for w in size_classes(definition, workloads)] == ["b1", "b2", "b3", "b17", "b64"]
