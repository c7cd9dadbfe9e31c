"""Workload sizes, the task files and the trial run of `kloop task import-fib`.

A published definition carries no workloads, and its const axes are a GPU's (a DeepSeek MoE
holds 1.4 GB of FP8 weights). The free var axes get small values (`BASE_SIZES` times `--scale`),
the var axes a constraint defines follow (`len_indptr == batch_size + 1`), and the sandbox rule
of `import-kernelbench` (`kb_memory.Footprint`: inputs + 3 x outputs within half the verifier's
memory limit) decides what fits; `--max-bytes N` picks the largest scale whose inputs plus
outputs fit in N bytes. A definition whose const axes alone overflow the sandbox is refused with
the tensors that do it and the `--const` that shrinks them.
"""

from __future__ import annotations

import json
import traceback
import uuid
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task.expr import ExpressionError, evaluate, names_in
from kloop.task.kb_memory import Footprint, human


class ImportProblems(BadInput):
    """Every reason a definition cannot be imported; the command prints one line each."""

    def __init__(self, where: str | Path, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(where, f"{len(problems)} problem(s): " + "; ".join(problems))


class UnwrittenOutputs(ImportProblems):
    """The reference returns fewer values than the definition has outputs and leaves these in-place inputs as drawn.

    `unwritten` maps the kloop output name (`residual_out`) to the published one (`residual`); the importer
    leaves them out (there is no ground truth for them) when other outputs remain.
    """

    def __init__(self, where: str | Path, problems: list[str], unwritten: dict[str, str]) -> None:
        self.unwritten = unwritten
        super().__init__(where, problems)


class OverBudget(ImportProblems):
    """The reference could not run within the memory limit (an allocation failed); `problems[0]` says where."""


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is an allocation that failed (RLIMIT_AS reached), not an error of the reference itself."""
    text = str(exc)
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "Cannot allocate memory" in text


def _allocation(exc: BaseException) -> str:
    """`an allocation of 2.15 GB (RuntimeError)` from torch's allocator message, else the exception's type."""
    import re

    found = re.search(r"tried to allocate (\d+) bytes", str(exc))
    size = f" of {human(int(found.group(1)))}" if found else ""
    return f"an allocation{size} ({type(exc).__name__})"


__all__ = ["BASE_SIZES", "ImportProblems", "OverBudget", "UnwrittenOutputs", "footprint", "out_of_memory",
           "size_workloads", "trial_run", "write_task"]

BASE_SIZES = (8, 32)
"""Values of the free var axes in the two default workloads, before `--scale`."""
_FIXED_AXES = {"one": 1, "m32": 32, "m4": 4, "k4": 4, "beam_width": 1, "scalar": 1, "kv_planes": 2}
_SHARE = 0.5  # kernelbench.MEMORY_SHARE: the estimate must fit half the sandbox limit


def footprint(definition: dict[str, Any], axes: dict[str, int]) -> Footprint:
    """Bytes of one workload's inputs and outputs from shapes and dtypes (nothing allocated)."""
    from kloop.task.schema import DType

    full = {**_consts(definition), **axes}

    def size(tensors: dict[str, Any]) -> int:
        total = 0
        for spec in tensors.values():
            count = 1
            for axis in spec["shape"] or []:
                count *= full.get(axis, 1)
            total += int(count * DType(spec["dtype"]).itemsize)
        return total

    return Footprint(size(definition["inputs"]), size(definition["outputs"]), 0)


def _consts(definition: dict[str, Any]) -> dict[str, int]:
    return {a: s["value"] for a, s in definition["axes"].items() if s.get("type") == "const"}


def _solve(text: str, known: dict[str, int], unknown: str) -> int | None:
    """The value of `unknown` that makes `L == R` hold, when it is linear in it."""
    left, _, right = text.partition("==")

    def f(v: int) -> float:
        env = {**known, unknown: v}
        return float(evaluate(left, env)) - float(evaluate(right, env))

    try:
        f0, f1 = f(0), f(1)
        if f1 == f0:
            return None
        value = round(-f0 / (f1 - f0))
        return value if value >= 0 and f(value) == 0 else None
    except (ExpressionError, ZeroDivisionError):
        return None


def _derive(definition: dict[str, Any], values: dict[str, int]) -> dict[str, int]:
    """Fill the var axes that equality constraints define from the ones already chosen."""
    full = {**_consts(definition), **values}
    changed = True
    while changed:
        changed = False
        for text in definition["constraints"]:
            if text.count("==") != 1:
                continue
            missing = [n for n in names_in(text) if n not in full]
            if len(missing) == 1 and missing[0] in definition["axes"]:
                solved = _solve(text, full, missing[0])
                if solved is not None:
                    full[missing[0]] = solved
                    changed = True
    return {a: full[a] for a in full if a in values or a not in _consts(definition)}


def _holds(definition: dict[str, Any], axes: dict[str, int]) -> bool:
    full = {**_consts(definition), **axes}
    try:
        return all(bool(evaluate(t, full)) for t in definition["constraints"])
    except ExpressionError:
        return False


def _workload(definition: dict[str, Any], base: float) -> dict[str, int] | None:
    """Var-axis values: each axis no constraint defines gets `base` (in declaration order), the rest follow."""
    var = [a for a, s in definition["axes"].items() if s.get("type") == "var"]
    for bump in (0, 1, 2, 3):
        chosen: dict[str, int] = {}
        axes = _derive(definition, chosen)
        for axis in var:
            if axis in axes:
                continue
            stem = axis.removesuffix("_plus_1")
            if stem != axis and stem in axes:
                chosen[axis] = axes[stem] + 1  # `batch_size_plus_1` without a constraint saying so
            else:
                chosen[axis] = _FIXED_AXES.get(axis, max(1, round(base)) + bump)
            axes = _derive(definition, chosen)
        if all(a in axes for a in var) and _holds(definition, axes):
            return {a: axes[a] for a in var}
    return None


def size_workloads(definition: dict[str, Any], scale: float | None, max_bytes: int | None, memory_mb: int,
                   hints: Any) -> list[dict[str, int]]:  # fmt: skip
    """The var-axis values of the task's workloads, fitted to --scale / --max-bytes and the sandbox."""
    budget = int(memory_mb * (1 << 20) * _SHARE)
    if scale is not None and not 0 < scale <= 16:
        hints.problems.append(f"--scale: expected a factor in (0, 16], got {scale:g}")
        return []
    factor = 1.0 if scale is None else scale

    def fits(f: float) -> bool:
        for base in BASE_SIZES:
            axes = _workload(definition, base * f)
            if axes is None:
                continue
            fp = footprint(definition, axes)
            if fp.sandbox > budget or (max_bytes is not None and fp.data > max_bytes):
                return False
        return True

    if not fits(factor):
        low, high, found = 0.0, factor, None
        for _ in range(16):
            mid = (low + high) / 2
            low, high, found = (mid, high, mid) if fits(mid) else (low, mid, found)
        if found is None or _workload(definition, BASE_SIZES[0] * found) is None or not fits(found):
            _refuse(definition, budget, max_bytes, memory_mb, hints)
            return []
        hints.notes.append(f"var axes scaled by {found:.3g} to fit {'--max-bytes' if max_bytes else 'the sandbox'}")
        factor = found
    workloads: list[dict[str, int]] = []
    for base in BASE_SIZES:
        axes = _workload(definition, base * factor)
        if axes is not None and axes not in workloads:
            workloads.append(axes)
    if not workloads:
        hints.problems.append(f"no var-axis values satisfy the constraints {definition['constraints']}")
    return workloads


def _refuse(definition: dict[str, Any], budget: int, max_bytes: int | None, memory_mb: int, hints: Any) -> None:
    ones = {a: 1 for a, s in definition["axes"].items() if s.get("type") == "var"}
    fp = footprint(definition, _derive(definition, ones))
    single = {n: footprint({**definition, "inputs": {n: s}, "outputs": {}}, ones).inputs
              for n, s in definition["inputs"].items()}  # fmt: skip
    biggest = sorted(single, key=single.get, reverse=True)[:2]
    axes = sorted({a for n in biggest for a in definition["inputs"][n]["shape"] or []
                   if definition["axes"][a].get("type") == "const"}, key=lambda a: -definition["axes"][a]["value"])
    limit = f"--max-bytes {max_bytes}" if max_bytes is not None and fp.sandbox <= budget else f"the verifier's {memory_mb} MB limit"
    hints.problems.append(
        f"even with every var axis at 1 a workload needs {human(fp.data)} of inputs and outputs "
        f"({', '.join(f'{n} {human(single[n])}' for n in biggest)}), more than {limit} allows; shrink the const axes "
        f"with --const, e.g. " + " ".join(f"--const {a}={max(1, definition['axes'][a]['value'] // 8)}" for a in axes[:3]))


def write_task(folder: Path, definition: dict[str, Any], workloads: list[dict[str, int]], scalars: dict[str, Any],
               source: Path, notes: list[str]) -> None:  # fmt: skip
    """definition.json, workloads.jsonl (scalars fixed, tensors random or structured) and a README."""
    (folder / "definition.json").write_text(json.dumps(definition, indent=2) + "\n", encoding="utf-8")
    lines = []
    for axes in workloads:
        inputs: dict[str, Any] = {}
        for name, spec in definition["inputs"].items():
            if spec["shape"] is None and name in scalars:
                inputs[name] = {"type": "scalar", "value": scalars[name]}
            elif not spec.get("optional"):
                inputs[name] = {"type": "random"}
        key = json.dumps([definition["name"], axes], sort_keys=True)
        lines.append(json.dumps({"axes": axes, "inputs": inputs, "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, key))}))
    (folder / "workloads.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    readme = [f"# {definition['name']}", "", f"Imported by `kloop task import-fib` from `{source.name}`.", ""]
    readme += [f"- {n}" for n in notes] or ["- nothing needed changing"]
    (folder / "README.md").write_text("\n".join(readme) + "\n", encoding="utf-8")


def trial_run(folder: Path, source: Path) -> None:
    """Load the written task and run its reference once on the smallest workload; ImportProblems if it fails."""
    import torch

    from kloop.task.inputs import make_inputs
    from kloop.task.load import load_task
    from kloop.task.reference import outputs_as_dict, run_reference

    try:
        task = load_task(folder)
    except BadInput as exc:
        raise ImportProblems(source, [f"converted definition does not load: {exc.what}"]) from None
    workload = task.workloads[0]
    problems: list[str] = []
    unwritten: dict[str, str] = {}
    try:
        inputs = make_inputs(task.definition, workload, seed=0, task_root=task.root)
        drawn = {n: v.clone() for n, v in inputs.items() if isinstance(v, torch.Tensor)}  # as drawn, before the call
        with torch.no_grad():
            outputs = run_reference(task.definition, inputs)
    except Exception as exc:
        if out_of_memory(exc):
            raise OverBudget(source, [f"on the smallest workload {workload.axes} {_allocation(exc)} failed"]) from None
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise ImportProblems(source, [f"reference fails on generated inputs {workload.axes}: {type(exc).__name__}: "
                                      f"{str(exc)[:200]} (line {frame.lineno} of {frame.filename})"]) from None  # fmt: skip
    for oname, value in outputs_as_dict(task.definition, outputs).items():
        problems += _check_output(task.definition, oname, value, workload.axes)
        before = drawn.get(oname.removesuffix("_out")) if oname.endswith("_out") else None
        if isinstance(before, torch.Tensor) and isinstance(value, torch.Tensor) and before.shape == value.shape \
                and before.numel() and torch.equal(before.view(-1).float(), value.view(-1).float()):  # fmt: skip
            unwritten[oname] = oname.removesuffix("_out")
    if problems or unwritten:
        problems += [f"the reference never writes in-place output {o!r}: it returns fewer values than the definition "
                     f"has outputs and leaves input {i!r} unchanged" for o, i in unwritten.items()]  # fmt: skip
        if unwritten and len(problems) == len(unwritten):
            raise UnwrittenOutputs(source, problems, unwritten)
        raise ImportProblems(source, problems)


def _check_output(definition: Any, name: str, value: Any, var: dict[str, int]) -> list[str]:
    import torch

    from kloop.task.inputs import torch_dtype

    spec = definition.outputs[name]
    if not isinstance(value, torch.Tensor):
        return [] if spec.shape is None else [f"reference output {name!r} is {type(value).__name__}, not a tensor"]
    axes = {**definition.const_axes, **var}
    expected = tuple(axes[a] for a in spec.shape or [])
    if tuple(value.shape) != expected and not (len(expected) == 1 and value.dim() == 1 and value.numel() == expected[0]):
        return [f"reference output {name!r} has shape {tuple(value.shape)}, the definition says {expected} "
                f"({spec.shape} at {var})"]  # fmt: skip
    if value.dtype != torch_dtype(spec.dtype, name):
        return [f"reference output {name!r} is {value.dtype}, the definition says {spec.dtype.value}"]
    return []
