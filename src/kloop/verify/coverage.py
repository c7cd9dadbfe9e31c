"""Input coverage: correctness is also judged on inputs beyond the task's declared distribution.

A task imported from KernelBench draws its inputs from [0, 1); on those, ReLU written as the
identity, softmax without max-subtraction and RMSNorm with eps outside the square root all pass.
So on the smallest listed workload the supervisor also runs each regime of
`kloop.task.inputs.COVERAGE_REGIMES` (signed, wide, small, tiny, special values), fresh from the
secret seed, through the same checks (failures are `numeric` / `finite` with the regime named);
they appear in `workloads` as `heldout-coverage-<regime>-<uuid>` with `heldout: true` (never timed).

A regime is judged only where an honest kernel can answer it: the float64 reference is finite and
fits the output dtype, and the reference run in the task's own precision stays within 1/16 of the
task's own tolerance (`ANSWER_MARGIN`): another honest summation order may err several times more
than the reference's own (float32 matmul at `wide` scale: 0.31 of the tolerance for torch's order,
2.7 for a k-blocked sum), so a regime where the reference itself comes close is skipped.
A task narrows coverage through `kloop.coverage` with a reason; the verdict says what was skipped.
"""

from __future__ import annotations

from typing import Any

from kloop.task.schema import Definition, Workload
from kloop.verify.process import SandboxProcess
from kloop.verify.result import WorkloadResult
from kloop.verify.workload import WorkloadJudge, derive_seed

ANSWER_MARGIN = 16.0


def smallest(definition: Definition, workloads: list[Workload]) -> Workload | None:
    """The listed workload with the fewest input elements (coverage is about values, not size)."""
    from kloop.task.shapes import resolve_axes, tensor_shapes

    def size(workload: Workload) -> int:
        shapes = tensor_shapes(definition, resolve_axes(definition, workload))
        total = 0
        for name in definition.inputs:
            n = 1
            for d in shapes.get(name) or ():
                n *= int(d)
            total += n
        return total

    return min(workloads, key=size) if workloads else None


def unanswerable(judge: WorkloadJudge, inputs: dict[str, Any], ref: dict[str, Any]) -> str | None:
    """Why no honest kernel in the task's precision can be held to these inputs, or None."""
    import torch

    from kloop.task.inputs import torch_dtype
    from kloop.task.reference import outputs_as_dict
    from kloop.task.shapes import comparator_for, tolerance_for
    from kloop.verify.compare import compare

    definition = judge.definition
    for name, out in ref.items():
        if out.dtype.is_floating_point and not bool(torch.isfinite(out).all()):
            return f"the reference's {name} is not finite"
        dtype = torch_dtype(definition.outputs[name].dtype, name)
        if dtype.is_floating_point and out.numel() and float(out.abs().max()) > torch.finfo(dtype).max / 2:
            return f"the reference's {name} does not fit {dtype}"
    try:
        with torch.no_grad():
            native = outputs_as_dict(definition, judge.reference(*inputs.values()))
    except Exception as exc:  # the reference cannot run in native precision: judge on the float64 answer
        return None if ref else f"the reference fails: {type(exc).__name__}"
    for name, expected in ref.items():
        got = native.get(name)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
            return None
        tol, comp = tolerance_for(definition, name), comparator_for(definition, name)
        c = compare(got.detach().cpu(), expected, tol, comp)
        if not (c.finite and c.numeric):
            return f"the reference in the task's own precision misses its tolerance on {name}"
        used = _tolerance_used(got.detach().cpu(), expected, tol)
        if used is not None and used > 1.0 / ANSWER_MARGIN:
            return f"the reference in the task's own precision uses {used:.2f} of its tolerance on {name}"
    return None


def _tolerance_used(got: Any, expected: Any, tol: Any) -> float | None:
    """max |got - ref| / (atol + rtol*|ref|) for float outputs (None: exact or non-float comparison)."""
    import torch

    if tol.exact or not got.dtype.is_floating_point:
        return None
    ref = expected.to(torch.float64)
    allowed = tol.atol + tol.rtol * ref.abs()
    if got.numel() == 0 or not bool((allowed > 0).all()):
        return None
    return float(((got.to(torch.float64) - ref).abs() / allowed).max())


def judge_coverage(judge: WorkloadJudge, box: SandboxProcess, listed: list[Workload],
                   timeout_s: float) -> tuple[list[WorkloadResult], list[str]]:  # fmt: skip
    """Judge every regime on the smallest listed workload: (results, notes on what was skipped)."""
    from kloop.task.inputs import coverage_inputs, coverage_regimes
    from kloop.task.shapes import resolve_axes

    definition = judge.definition
    base = smallest(definition, listed)
    if base is None:
        return [], []
    results: list[WorkloadResult] = []
    notes: list[str] = []
    spec = definition.settings.coverage
    if spec is not None:
        notes.append(f"coverage narrowed by the task: {spec.reason}")
    axes = resolve_axes(definition, base)
    for regime in coverage_regimes(definition):
        workload = base.model_copy(update={"uuid": f"heldout-coverage-{regime}-{base.uuid[:8]}"})
        inputs = coverage_inputs(definition, workload, regime, seed=derive_seed(judge.seed, workload.uuid),
                                 task_root=judge.task.root)  # fmt: skip
        var = {a: axes[a] for a in definition.var_axes if a in axes}
        where = f"workload {base.uuid[:8]} {var} with {regime} inputs"
        ref = judge.reference_outputs(inputs, axes, where)
        why = unanswerable(judge, inputs, ref)
        if why is not None:
            notes.append(f"{regime} inputs skipped: {why}")
            continue
        result = judge.judge(box, workload, False, timeout_s, prepared=(inputs, axes, ref, where))
        result.heldout = True  # not a listed workload: never timed, kept out of speedups and reports' tables
        results.append(result)
        if result.status.value != "PASSED":
            break
    return results, notes
