"""Sizes the published definition leaves unstated, found by running its own reference (`import-fib`).

flashinfer's tracer records some axes as free var axes that are really functions of others
(`num_scale_elems` = M * K / 16, `A_scale_size` = the padded 128x4 scale buffer of A), and some
const axes without a value (`page_size`, the `block_size` of `[K_div_block_size, N, block_size]`).
Independent draws make the reference fail or return other shapes than declared. The reference is
the task's ground truth anyway, so it is used as an oracle:

1. unknowns are the unresolved consts and the free var axes that size a single tensor (an axis two
   tensors share is a real problem dimension, not a buffer length);
2. on the smallest workload each unknown input axis takes candidate values (powers of two, the
   definition's own consts) until the reference gets further (its traceback changes) or runs; an
   axis that sizes only an output is read off the reference's result;
3. each var unknown's relation to the other var axes is measured by doubling each of them in turn
   (`X == c * M * batch_size`), and the relation becomes a constraint, so every listed and held-out
   workload follows it; unresolved consts become consts with the value found;
4. the result is accepted only if the reference runs on every workload and every output has its
   declared shape (a 1-D output may be the reference's result flattened, same values in row-major
   order). Nothing here loosens a check: a definition the search cannot satisfy is still refused.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Outcome", "const_candidates", "divisor_candidates", "search"]

_CONST_ORDER = (16, 32, 64, 128, 8, 4, 2, 1)
_POWERS = tuple(2**k for k in range(25))
_RATIOS = (1, 2, 4, 8)


def const_candidates(axes: dict[str, Any]) -> list[int]:
    """Values tried for a const the tracer left without one: common powers of two, then the definition's consts."""
    own = [s["value"] for s in axes.values() if s.get("type") == "const" and isinstance(s.get("value"), int)]
    return list(dict.fromkeys([*_CONST_ORDER, *sorted(v for v in own if 0 < v <= 4096)]))


def divisor_candidates(total: int) -> list[int]:
    """Block sizes tried for an undeclared divisor of `total`: powers of two that divide it, 128 first."""
    found = [d for d in (128, 64, 32, 16, 256, 8, 4, 2) if total % d == 0]
    return found or [1]


@dataclass
class Outcome:
    """What the search settled: the definition and workloads to write, and how each unknown was found."""

    definition: dict[str, Any]
    workloads: list[dict[str, int]]
    notes: list[str] = field(default_factory=list)


class _Runner:
    """Runs the reference on one assignment of axes, with unknown consts staged as var axes."""

    def __init__(self, definition: dict[str, Any], unknown_consts: list[str], scalars: dict[str, Any],
                 budget: int, first: dict[str, int]) -> None:  # fmt: skip
        from kloop.task.fib_sizes import write_task

        self.staged = {**definition, "axes": {a: ({"type": "var"} if a in unknown_consts else s)
                                               for a, s in definition["axes"].items()}}  # fmt: skip
        self.budget = budget
        self.folder = Path(tempfile.mkdtemp(prefix="kloop-fib-oracle-"))
        write_task(self.folder, self.staged, [self.derive(first)], scalars, self.folder / "x.json", [])
        from kloop.task.load import load_task

        self.task = load_task(self.folder)
        self.inputs = self.task.workloads[0].inputs

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def derive(self, axes: dict[str, int], extra: tuple[str, ...] = ()) -> dict[str, int]:
        """Var axes an equality constraint defines (`K_div_block_size == K // block_size`) follow the others."""
        from kloop.task.expr import ExpressionError, evaluate

        full = {a: s["value"] for a, s in self.staged["axes"].items() if s.get("type") == "const"} | axes
        axes = dict(axes)
        for text in [*self.staged["constraints"], *extra]:
            left, sep, right = text.partition("==")
            if sep and left.strip() in axes and "==" not in right:
                try:
                    value = evaluate(right, full)
                except (ExpressionError, ZeroDivisionError):
                    continue
                if isinstance(value, int | float) and float(value).is_integer() and value >= 0:
                    axes[left.strip()] = full[left.strip()] = int(value)
        return axes

    def fits(self, axes: dict[str, int]) -> bool:
        from kloop.task.fib_sizes import footprint

        return footprint(self.staged, axes).sandbox <= self.budget

    def run(self, axes: dict[str, int], extra: tuple[str, ...] = (),
            seed: int = 0) -> tuple[tuple[Any, ...] | None, dict[str, Any]]:  # fmt: skip
        """(None, outputs) when the reference runs, else (a signature of where it failed, {})."""
        import torch

        from kloop.task.inputs import make_inputs
        from kloop.task.reference import run_reference
        from kloop.task.schema import Workload

        axes = self.derive(axes, extra)
        if not self.fits(axes):
            return ("too big",), {}
        try:
            workload = Workload(axes=axes, inputs=self.inputs, uuid="oracle")
            inputs = make_inputs(self.task.definition, workload, seed=seed, task_root=self.task.root)
            with torch.no_grad():
                return None, run_reference(self.task.definition, inputs)
        except Exception as exc:  # the reference is untrusted text here; any failure is data
            from kloop.task.fib_sizes import out_of_memory

            if out_of_memory(exc):  # past the memory limit: the same verdict as the estimate's
                return ("too big",), {}
            frames = tuple(f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<"))
            return (type(exc).__name__, frames), {}


def search(definition: dict[str, Any], workloads: list[dict[str, int]], scalars: dict[str, Any],
           unknown_consts: dict[str, list[int]], budget: int) -> Outcome | None:  # fmt: skip
    """Consts and derived var axes that make the reference run with its declared shapes, or None."""
    from kloop.task.fib_sizes import _derive

    first = {**workloads[0], **{a: definition["axes"][a]["value"] for a in unknown_consts}}
    runner = _Runner(definition, list(unknown_consts), scalars, budget, first)
    try:
        sums = _sums(runner, first, definition, list(unknown_consts))
        summed = [text.partition(" == ")[0] for text in sums]
        notes = [f"axis {text.partition(' == ')[0]!r} is derived: {text}, found by running the reference (it runs "
                 f"when the axis follows {text.partition(' == ')[2].split(' + ')[0]!r} and fails when it does not)"
                 for text in sums]  # fmt: skip
        definition = {**definition, "constraints": [*definition["constraints"], *sums]}
        runner.staged["constraints"] = [*runner.staged["constraints"], *sums]
        first = runner.derive(first)
        filled = _nonempty(runner, first)
        if filled:
            structured = {n: ({**s, "nonempty": True} if n in filled else s)
                          for n, s in definition["kloop"]["structured"].items()}  # fmt: skip
            definition = {**definition, "kloop": {**definition["kloop"], "structured": structured}}
            notes += [f"input {n!r} drawn with no empty segment: the reference reads the first entry of every "
                      f"segment (it gets further than with empty ones)" for n in filled]  # fmt: skip
        var_axes = [a for a, s in definition["axes"].items() if s.get("type") == "var"]
        tied = {n for text in definition["constraints"] for n in _names(text)}
        owners = _owners(definition)
        single = [a for a in var_axes if a not in tied and len(owners.get(a, ())) == 1]
        out_only = [a for a in single if all(role == "output" for role, _ in owners[a])]
        searched = [*unknown_consts, *[a for a in single if a not in out_only]]
        defined = {t.partition("==")[0].strip() for t in definition["constraints"] if t.count("==") == 1}
        base = [a for a in var_axes if a not in single and a not in defined]  # `batch_size` of `X == batch_size + 1` too
        if not searched and not out_only and not sums and not filled:
            return None
        found = _settle(runner, first, searched, {**{a: list(c) for a, c in unknown_consts.items()},
                                                  **{a: [first[a], *_POWERS] for a in searched if a not in unknown_consts}})  # fmt: skip
        if found is None:
            return None
        axes, outputs = found
        axes = runner.derive(axes)
        if not _read_outputs(runner, axes, outputs, out_only):
            return None
        definition = {**definition, "axes": {a: ({"type": "const", "value": axes[a]} if a in unknown_consts else s)
                                             for a, s in definition["axes"].items()}}  # fmt: skip
        notes += [f"const axis {a!r} has no value (the tracer could not resolve it): {axes[a]} is the first of "
                  f"{unknown_consts[a]} with which the reference runs and gives its declared shapes" for a in unknown_consts]  # fmt: skip
        relations: dict[str, str] = {}
        for unknown in [a for a in [*searched, *out_only] if a not in unknown_consts]:
            relation = _relation(runner, definition, axes, unknown, base, searched, out_only)
            if relation is None:
                return None
            relations[unknown] = relation
            notes.append(f"axis {unknown!r} (sizes only {owners[unknown][0][1]!r}) is derived: {unknown} == {relation}, "
                         f"measured by running the reference with each other var axis doubled")  # fmt: skip
        settled = dict(definition)
        settled["constraints"] = [*definition["constraints"], *(f"{a} == {r}" for a, r in relations.items())]
        settled_var = [a for a, s in settled["axes"].items() if s.get("type") == "var"]
        fixed: list[dict[str, int]] = []
        for workload in workloads:
            values = _derive(settled, {a: workload[a] for a in settled_var if a not in relations and a not in summed})
            if any(a not in values for a in settled_var):
                return None
            row = {a: values[a] for a in settled_var}
            status, result = runner.run({**row, **{a: axes[a] for a in unknown_consts}})
            if status is not None or not _shapes_ok(settled, {**row, **{a: axes[a] for a in unknown_consts}}, result):
                return None
            if row not in fixed:
                fixed.append(row)
        return Outcome(settled, fixed, notes)
    finally:
        runner.close()


def _sums(runner: _Runner, axes: dict[str, int], definition: dict[str, Any], unknown_consts: list[str]) -> list[str]:
    """Relations `X == Y + c` (c: 1 or one of the definition's consts) the reference needs between var axes.

    The tracer records `head_dim` (= no_rope_dim + rope_dim) or `len_indptr` (= total_q + 1) as free
    var axes. A relation is kept only when, with `Y` doubled, the reference gets further with `X`
    following `Y` than with `X` left at its old `Y + c`: `X` really depends on that `Y`, not on
    another axis that happened to have the same value in the first workload.
    """
    status, _ = runner.run(axes)
    if status is None:
        return []
    derived = {t.partition("==")[0].strip() for t in definition["constraints"] if t.count("==") == 1}
    var_axes = [a for a, s in definition["axes"].items() if s.get("type") == "var" and a not in unknown_consts]
    free = [a for a in var_axes if a not in derived]
    addends: dict[int, str] = {1: "1"}
    for axis, spec in definition["axes"].items():
        value = spec.get("value")
        if spec.get("type") == "const" and axis not in unknown_consts and isinstance(value, int) and 1 < value <= 4096:
            addends.setdefault(value, axis)
    found: list[str] = []
    for x in free:
        for y in [a for a in free if a != x and a not in {f.partition(" == ")[0] for f in found}]:
            probe = {**axes, y: axes[y] * 2}
            for value, name in addends.items():
                relation = f"{x} == {y} + {name}"
                following, _ = runner.run(probe, (*found, relation))
                if following is not None and not _further(following, status):
                    continue
                stale, _ = runner.run(probe, (*found, f"{x} == {axes[y] + value}"))
                if stale is None or (following is not None and not _further(following, stale)):
                    continue
                found.append(relation)
                status, _ = runner.run(axes, tuple(found))
                break
            if found and found[-1].startswith(f"{x} == "):
                break
        if status is None:
            break
    return found


def _nonempty(runner: _Runner, axes: dict[str, int]) -> list[str]:
    """indptr inputs to draw without empty segments, when the reference fails with them and gets further without."""
    structured = runner.task.definition.settings.structured
    names = [n for n, s in structured.items() if s.kind == "indptr" and not s.nonempty]
    probes = [(axes, 0), *(({a: v * k for a, v in axes.items()}, seed) for k in (2, 4) for seed in range(3))]
    for probe, seed in probes:  # more tokens than segments, several draws: an empty segment is likely somewhere
        status, _ = runner.run(probe, seed=seed)
        if status is None or not names:
            continue
        old = dict(structured)
        structured.update({n: structured[n].model_copy(update={"nonempty": True}) for n in names})
        new, _ = runner.run(probe, seed=seed)
        if new is None or _further(new, status):
            return names
        structured.update(old)
    return []


def _names(text: str) -> set[str]:
    from kloop.task.expr import ExpressionError, names_in

    try:
        return names_in(text)
    except ExpressionError:
        return set()


def _owners(definition: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Axis -> the (role, tensor) pairs whose shape uses it; an in-place pair (`x`, `x_out`) counts once."""
    owners: dict[str, list[tuple[str, str]]] = {}
    for role in ("input", "output"):
        for tname, spec in definition[f"{role}s"].items():
            stem = tname.removesuffix("_out") if role == "output" else tname
            for axis in dict.fromkeys(spec.get("shape") or []):
                pairs = owners.setdefault(axis, [])
                if not any(name == stem for _, name in pairs):
                    pairs.append((role, stem))
    return owners


def _settle(runner: _Runner, axes: dict[str, int], searched: list[str],
            candidates: dict[str, list[int]]) -> tuple[dict[str, int], dict[str, Any]] | None:  # fmt: skip
    """Coordinate search: each unknown takes the first candidate that moves the failure on or lets the reference run."""
    axes = dict(axes)
    status, outputs = runner.run(axes)
    for _ in range(2):
        if status is None:
            return axes, outputs
        for unknown in searched:
            for value in candidates[unknown]:
                if value == axes[unknown]:
                    continue
                trial = {**axes, unknown: value}
                new, result = runner.run(trial)
                if new is None or _further(new, status):
                    axes, status, outputs = trial, new, result
                    break
            if status is None:
                return axes, outputs
    return (axes, outputs) if status is None else None


def _further(new: tuple[Any, ...], old: tuple[Any, ...] | None) -> bool:
    """Whether the reference got further: its failing call chain is later in its text (line by line)."""
    if new == ("too big",) or old is None:
        return False
    return old == ("too big",) or new[1] > old[1]


def _read_outputs(runner: _Runner, axes: dict[str, int], outputs: dict[str, Any], out_only: list[str]) -> bool:
    """Set each output-only axis from the reference's result (a dim, or what a flattened 1-D output holds)."""
    for axis in out_only:
        value = _observed(runner.staged, axes, outputs, axis)
        if value is None:
            return False
        axes[axis] = value
    return _shapes_ok(runner.staged, axes, outputs)


def _observed(definition: dict[str, Any], axes: dict[str, int], outputs: dict[str, Any], axis: str) -> int | None:
    for oname, spec in definition["outputs"].items():
        shape, value = spec.get("shape") or [], outputs.get(oname)
        if axis not in shape or not hasattr(value, "shape"):
            continue
        if len(shape) == len(value.shape):
            return int(value.shape[shape.index(axis)])
        others = math.prod(axes.get(a, definition["axes"].get(a, {}).get("value", 1)) for a in shape if a != axis)
        if len(shape) == 1 or (others and value.numel() % others == 0):
            return int(value.numel() // max(1, others))
    return None


def _shapes_ok(definition: dict[str, Any], axes: dict[str, int], outputs: dict[str, Any]) -> bool:
    """Every output has its declared shape; a 1-D declaration also takes a result with the same count, flattened."""
    full = {a: s["value"] for a, s in definition["axes"].items() if s.get("type") == "const"} | axes
    for oname, spec in definition["outputs"].items():
        value = outputs.get(oname)
        if spec.get("shape") is None or not hasattr(value, "shape"):
            continue
        expected = tuple(full.get(a, -1) for a in spec["shape"])
        same = tuple(value.shape) == expected
        flat = len(expected) == 1 and value.numel() == expected[0]
        if not (same or flat):
            return False
    return True


def _relation(runner: _Runner, definition: dict[str, Any], axes: dict[str, int], unknown: str, base: list[str],
              searched: list[str], out_only: list[str]) -> str | None:  # fmt: skip
    """`c * V * W`: how `unknown` scales when each base var axis is doubled; None if it is not such a product."""
    from kloop.task.fib_sizes import _derive

    factors: list[str] = []
    divisor = 1
    for axis in base:
        probe = _derive(definition, {**{a: axes[a] for a in base}, axis: axes[axis] * 2})
        probe = {**axes, **probe}
        ratio = _ratio(runner, probe, unknown, axes[unknown], searched, out_only)
        if ratio is None:
            return None
        exponent = int(math.log2(ratio)) if ratio >= 1 else -1
        if exponent < 0 or 2**exponent != ratio:
            return None
        factors += [axis] * exponent
        divisor *= axes[axis] ** exponent
    if axes[unknown] % divisor:
        return None
    coefficient = axes[unknown] // divisor
    return " * ".join([str(coefficient), *factors]) if factors else str(coefficient)


def _ratio(runner: _Runner, probe: dict[str, int], unknown: str, value: int, searched: list[str],
           out_only: list[str]) -> int | None:  # fmt: skip
    """The factor by which `unknown` grows at `probe` (searched inputs take value * 1, 2, 4, 8 until the reference runs)."""
    if unknown in out_only:
        status, outputs = runner.run(probe)
        seen = _observed(runner.staged, probe, outputs, unknown) if status is None else None
        return seen // value if seen and seen % value == 0 else None
    for ratio in _RATIOS:
        trial = {**probe, unknown: value * ratio}
        others = [a for a in searched if a != unknown]
        found = _settle(runner, trial, others, {a: [trial[a] * r for r in _RATIOS] for a in others})
        if found is not None:
            status, outputs = runner.run(found[0])
            if status is None and _read_outputs(runner, runner.derive(found[0]), outputs, out_only):
                return ratio
    return None
