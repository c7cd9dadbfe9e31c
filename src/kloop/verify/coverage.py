"""Input coverage: correctness is also judged on inputs beyond the task's declared distribution.

A task imported from KernelBench draws its inputs from [0, 1); on those, ReLU written as the
identity, softmax without max-subtraction and RMSNorm with eps outside the square root all pass.
So the supervisor also runs each regime of `kloop.task.regimes.COVERAGE_REGIMES` (signed, wide,
small, tiny, shifted, special), fresh from the secret seed, through the same checks (failures are
`numeric` / `finite` with the regime named), on one workload of every *size class* (`size_classes`:
a kernel exact at batch 1 and wrong at every other batch must not pass); they appear in `workloads`
as `heldout-coverage-<regime>-<uuid>` with `heldout: true` (never timed).

Three promises:
- **The oracle is real.** A regime is judged only where an honest kernel in the task's precision can
  answer it: the float64 reference (forced through the reference's own casts,
  `kloop.task.precision`) is finite and fits the output dtype, and the reference run in the task's
  own precision stays within 1/16 of the tolerance of it (`ANSWER_MARGIN`), beyond the output dtype's
  own rounding: another honest summation order may err several times more than the reference's own
  (float32 matmul at `wide` scale: 0.31 of the tolerance for torch's order, 2.7 for a k-blocked sum).
  Otherwise the regime is skipped and the verdict says why. The first two are read off the float64
  answer before the candidate runs (`out_of_reach`); the third costs a second reference run, so it is
  asked only when the candidate missed the regime (`ill_conditioned`): a candidate that answers needs
  no excuse. The miss is judged aside and excused only for value checks (`EXCUSABLE`); the accepted
  set is never larger than when every regime was asked first.
- **A regime never makes a wrong answer look right.** Where a regime shrinks an output, its absolute
  tolerance shrinks with it (`regime_tolerance`): atol x min(1, rms(regime output) / rms(declared
  output)), so an output that fell below atol is still compared relatively.
- **Declared ranges are honoured** by every regime (the regime scales the declared magnitude), and
  parameters keep their declared values (`kloop.task.regimes`).
A task narrows coverage through `kloop.coverage` with a reason; the verdict says what was skipped.
"""

from __future__ import annotations

import math
from typing import Any

from kloop.task.schema import Definition, Tolerance, Workload
from kloop.verify.checks import CheckBook
from kloop.verify.process import SandboxProcess
from kloop.verify.result import WorkloadResult
from kloop.verify.threads import one_thread, single_threaded
from kloop.verify.workload import WorkloadJudge, derive_seed

ANSWER_MARGIN = 16.0


def _size(definition: Definition, workload: Workload) -> int:
    from kloop.task.shapes import resolve_axes, tensor_shapes

    shapes = tensor_shapes(definition, resolve_axes(definition, workload))
    return sum(math.prod(int(d) for d in shapes.get(name) or ()) for name in definition.inputs)


def smallest(definition: Definition, workloads: list[Workload]) -> Workload | None:
    """The listed workload with the fewest input elements."""
    return min(workloads, key=lambda w: _size(definition, w)) if workloads else None


def size_class(definition: Definition, workload: Workload) -> tuple[int, ...]:
    """Per var axis: 0 for 1, else ceil(log2(value)); 1, 2, 3-4, 5-8, ... are distinct classes."""
    from kloop.task.shapes import resolve_axes

    axes = resolve_axes(definition, workload)
    return tuple(0 if axes.get(a, 1) <= 1 else math.ceil(math.log2(axes[a])) for a in definition.var_axes)


def size_classes(definition: Definition, workloads: list[Workload]) -> list[Workload]:
    """The smallest listed workload of every size class, smallest first."""
    best: dict[tuple[int, ...], Workload] = {}
    for w in sorted(workloads, key=lambda w: _size(definition, w)):
        best.setdefault(size_class(definition, w), w)
    return list(best.values())


@single_threaded
def _rms(t: Any) -> float:
    import torch

    v = t.detach() if t.dtype == torch.float64 else t.detach().float()
    finite = torch.isfinite(v)
    if not bool(finite.all()):  # rare: only then the masked copy
        v = v[finite]
    return float(torch.linalg.vector_norm(v, dtype=torch.float64) / math.sqrt(v.numel())) if v.numel() else 0.0


def regime_tolerance(tol: Tolerance, regime_out: Any, declared_out: Any) -> Tolerance:
    """`tol` with atol scaled down by how far the regime shrank the output's rms (never up)."""
    return _scaled_tolerance(tol, regime_out, _rms(declared_out) if declared_out.dtype.is_floating_point else 0.0)


def _scaled_tolerance(tol: Tolerance, regime_out: Any, declared_rms: float) -> Tolerance:
    """`regime_tolerance` with the declared output's rms computed once per workload, not per regime."""
    if tol.exact or not regime_out.dtype.is_floating_point or declared_rms <= 0:
        return tol
    factor = min(1.0, _rms(regime_out) / declared_rms)
    return tol if factor >= 1.0 else tol.model_copy(update={"atol": tol.atol * factor})


EXCUSABLE = frozenset({"numeric", "finite", "determinism", "runtime"})
"""Checks whose failure an ill-conditioned regime excuses: they depend on the values drawn (an
honest kernel may also raise on them). Everything else (inputs changed, outputs unwritten, threads,
policy, types) is wrong whatever the inputs, and is held against the candidate even there."""


@single_threaded
def out_of_reach(judge: WorkloadJudge, ref: dict[str, Any]) -> str | None:
    """Why the float64 answer itself cannot be asked for (not finite, or beyond the output dtype), or None."""
    import torch

    from kloop.task.inputs import torch_dtype

    for name, out in ref.items():
        wide = out.detach().to(torch.float64) if out.dtype.is_floating_point else None
        if wide is not None and not bool(torch.isfinite(wide).all()):
            return f"the reference's {name} is not finite"
        dtype = torch_dtype(judge.definition.outputs[name].dtype, name)
        if wide is not None and dtype.is_floating_point and wide.numel() and float(wide.abs().max()) > torch.finfo(dtype).max / 2:
            return f"the reference's {name} does not fit {dtype}"
    return None


def ill_conditioned(judge: WorkloadJudge, inputs: dict[str, Any], axes: dict[str, int], ref: dict[str, Any],
                    tolerances: dict[str, Tolerance]) -> str | None:  # fmt: skip
    """Why no honest kernel in the task's precision can be held to these inputs, or None.

    Runs the reference in the task's own precision and holds it to its float64 answer (`ANSWER_MARGIN`).
    Asked only after a candidate missed a regime: a candidate that answered needs no excuse.
    """
    from kloop.task.shapes import comparator_for
    from kloop.verify.compare import compare

    if judge.precision == "native":
        return None  # no higher-precision answer to hold the reference to: judge on its own
    try:
        native = judge.reference_in("native", inputs, axes)
    except Exception as exc:  # the reference cannot run in native precision: judge on the float64 answer
        return None if ref else f"the reference fails: {type(exc).__name__}"
    for name, expected in ref.items():
        got = native[name]
        tol, comp = tolerances[name], comparator_for(judge.definition, name)
        c = compare(got, expected, tol, comp)
        if not (c.finite and c.numeric):
            return f"the reference in the task's own precision misses its tolerance on {name} ({c.detail})"
        used = _tolerance_used(got, expected, tol)
        if used is not None and used > 1.0 / ANSWER_MARGIN:
            return (f"ill-conditioned: the reference in the task's own precision uses {used:.2f} of the tolerance"
                    f" on {name} against its float64 answer")  # fmt: skip
    return None


@single_threaded
def _tolerance_used(got: Any, expected: Any, tol: Tolerance) -> float | None:
    """max over elements of the working-precision error / (atol + rtol*|ref|).

    The error is |got - ref| less half an ulp of `got`'s dtype: the output's own rounding is
    not the reference's working precision, and every honest kernel rounds the same way.
    """
    import torch

    if tol.exact or not got.dtype.is_floating_point:
        return None
    ref = expected.to(torch.float64)
    out = got.to(torch.float64)
    allowed = tol.atol + tol.rtol * ref.abs()
    if got.numel() == 0 or not bool((allowed > 0).all()):
        return None
    info = torch.finfo(got.dtype)
    rounding = out.abs().clamp(min=info.smallest_normal) * (info.eps / 2)
    err = ((out - ref).abs() - rounding).clamp(min=0)
    return float((err / allowed).max())


def judge_coverage(judge: WorkloadJudge, box: SandboxProcess, listed: list[Workload],
                   timeout_s: float) -> tuple[list[WorkloadResult], list[str]]:  # fmt: skip
    """Judge every regime on one workload of every size class: (results, notes on what was skipped)."""
    from kloop.task.regimes import coverage_regimes

    definition = judge.definition
    bases = size_classes(definition, listed)
    results: list[WorkloadResult] = []
    notes: list[str] = []
    spec = definition.settings.coverage
    if spec is not None:
        notes.append(f"coverage narrowed by the task: {spec.reason}")
    regimes = coverage_regimes(definition)
    if regimes and bases:
        notes.append(f"{len(bases)} size class{'es' if len(bases) > 1 else ''} of {len(listed)} listed workloads")
    for base in bases:
        if not _cover_one(judge, box, base, regimes, timeout_s, results, notes):
            break
    if regimes and bases:
        notes.append(f"reference in {judge.precision}")
    return results, notes


def _cover_one(judge: WorkloadJudge, box: SandboxProcess, base: Workload, regimes: list[str], timeout_s: float,
               results: list[WorkloadResult], notes: list[str]) -> bool:  # fmt: skip
    """Every regime on one workload; False once the candidate failed one that an honest kernel can answer."""
    from kloop.task.regimes import coverage_inputs
    from kloop.task.shapes import tolerance_for

    definition = judge.definition
    declared, axes = judge.inputs_for(base)
    var = {a: axes[a] for a in definition.var_axes if a in axes}
    declared_ref = judge.reference_outputs(declared, axes, judge.label(base, axes))
    declared_rms = {n: _rms(v) if v.dtype.is_floating_point else 0.0 for n, v in declared_ref.items()}
    for regime in regimes:
        workload = base.model_copy(update={"uuid": f"heldout-coverage-{regime}-{base.uuid}"})
        with one_thread():
            inputs = coverage_inputs(definition, workload, regime, seed=derive_seed(judge.seed, workload.uuid),
                                     task_root=judge.task.root)  # fmt: skip
        where = f"workload {base.uuid[:18]} {var} with {regime} inputs"
        ref = judge.reference_outputs(inputs, axes, where)
        tols = {n: _scaled_tolerance(tolerance_for(definition, n), ref[n], declared_rms[n]) for n in ref}
        why = out_of_reach(judge, ref)
        if why is not None:
            notes.append(f"{regime} inputs skipped on {var or base.uuid[:8]}: {why}")
            continue
        result, book = _judge_aside(judge, box, workload, (inputs, axes, ref, where), tols, timeout_s)
        if result.status.value != "PASSED" and book.failed_only(EXCUSABLE):
            why = ill_conditioned(judge, inputs, axes, ref, tols)
            if why is not None:  # no honest kernel could be held to it either: the miss is not the candidate's
                notes.append(f"{regime} inputs skipped on {var or base.uuid[:8]}: {why}")
                continue
        judge.book.merge(book)
        result.heldout = True  # not a listed workload: never timed, kept out of speedups and reports' tables
        results.append(result)
        if result.status.value != "PASSED":
            return False
    return True


def _judge_aside(judge: WorkloadJudge, box: SandboxProcess, workload: Workload,
                 prepared: tuple[dict[str, Any], dict[str, int], dict[str, Any], str], tols: dict[str, Tolerance],
                 timeout_s: float) -> tuple[WorkloadResult, CheckBook]:  # fmt: skip
    """Judge one regime into a book of its own: its failures count only once the oracle says they may."""
    book, aside = judge.book, CheckBook()
    judge.book = aside
    try:
        result = judge.judge(box, workload, False, timeout_s, prepared=prepared, tolerances=tols, runs=1)
    except BaseException:  # the box failed (timeout, crash): what it did before that counts as it is
        book.merge(aside)
        raise
    finally:
        judge.book = book
    return result, aside
