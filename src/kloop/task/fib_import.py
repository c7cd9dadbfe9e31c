"""Import a FlashInfer-Trace definition as flashinfer publishes it (`kloop task import-fib`).

flashinfer's `tests/trace/fi_trace_out/*.json` are Definitions with a `_<op>_reference` instead
of `run`, tracer dtypes (`unknown`, `uint8`, `string`...), in-place outputs named like inputs,
constraints over tensors and no workloads. The import turns one into a task directory:

1. reads the JSON without kloop's validation and collects **every** problem before stopping
   (`ImportProblems`: exit 2, one line each);
2. binds the reference's parameters to the inputs by name (`fib_reference`), maps dtypes and
   fixes Python-only arguments to constants (`fib_hints`), renames outputs that clash with
   inputs (`residual` -> `residual_out`), and records structured inputs under
   `kloop.structured` so every draw (held-out, coverage) keeps them valid;
3. sizes the workloads to this machine (`--scale`, `--max-bytes`, the sandbox budget of
   `import-kernelbench`), writes the task, and runs the reference once on the smallest
   workload: a reference that fails there is reported, not written.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task import fib_check, fib_hints, fib_oracle, fib_reference
from kloop.task.fib_sizes import ImportProblems, UnwrittenOutputs
from kloop.task.fib_sizes import size_workloads as _size
from kloop.task.fib_sizes import write_task as _write
from kloop.task.parsing import read_json

__all__ = ["UNCHECKED", "ImportProblems", "Imported", "import_fib"]

UNCHECKED = "reference check skipped: it cannot run within --memory-mb"
"""How the note of an import whose reference exceeded the memory limit begins (the sweep skips its A/A)."""



@dataclass
class Imported:
    """What the import wrote and changed."""

    path: Path
    name: str
    workloads: list[dict[str, int]]
    notes: list[str] = field(default_factory=list)


def import_fib(file: Path, out: Path, *, name: str | None = None, scale: float | None = None,
               max_bytes: int | None = None, memory_mb: int = 8192, consts: dict[str, int] | None = None,
               check: bool = True, helpers: list[Path] | None = None) -> Imported:  # fmt: skip
    """Convert `file` into a task directory at `out`; ImportProblems lists everything wrong."""
    raw = read_json(file, "FlashInfer-Trace definition")
    if not isinstance(raw, dict):
        raise BadInput(file, "not a FlashInfer-Trace definition (expected a JSON object)")
    table = fib_reference.helper_table(list(helpers or []))
    try:
        return _import(raw, file, out, name, scale, max_bytes, memory_mb, consts or {}, check, table, [])
    except UnwrittenOutputs as skipped:
        kept = {o: s for o, s in raw["outputs"].items() if o not in skipped.unwritten.values()}
        if not kept:
            raise
        notes = [f"output {i!r} (in place into input {i!r}) left out: the reference returns fewer values than the "
                 f"definition has outputs and never writes it, so there is no ground truth for it"
                 for o, i in skipped.unwritten.items()]  # fmt: skip
        return _import({**raw, "outputs": kept}, file, out, name, scale, max_bytes, memory_mb, consts or {}, check,
                       table, notes)  # fmt: skip


def _import(raw: dict[str, Any], file: Path, out: Path, name: str | None, scale: float | None, max_bytes: int | None,
            memory_mb: int, consts: dict[str, int], check: bool, table: dict[str, str],
            first_notes: list[str]) -> Imported:  # fmt: skip
    converted, hints = _convert(raw, name, consts, table)
    hints.notes[:0] = first_notes
    unknown: dict[str, list[int]] = converted.pop("_unknown_consts", {}) if converted else {}
    if unknown and not check:
        hints.problems += [f"const axis {a!r} has no value (the tracer could not resolve it); give one with "
                           f"--const {a}=N, or drop --no-check to let the reference check search one" for a in unknown]  # fmt: skip
    workloads: list[dict[str, int]] = []
    if converted is not None and not hints.problems:
        workloads = _size(converted, scale, max_bytes, memory_mb, hints)
    if hints.problems or converted is None:
        raise ImportProblems(file, hints.problems)
    staging = Path(tempfile.mkdtemp(prefix="kloop-fib-"))
    scalars = _scalars(raw, converted)
    try:
        _write(staging, converted, workloads, scalars, file, hints.notes)
        if check:
            converted, workloads = _checked_within(staging, file, converted, workloads, scalars, unknown, memory_mb,
                                                   hints)  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        for item in staging.iterdir():
            shutil.move(str(item), out / item.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Imported(out, converted["name"], workloads, hints.notes)  # type: ignore[index]


def _checked_within(staging: Path, file: Path, converted: dict[str, Any], workloads: list[dict[str, int]],
                    scalars: dict[str, Any], unknown: dict[str, list[int]], memory_mb: int,
                    hints: fib_hints.Hints) -> tuple[dict[str, Any], list[dict[str, int]]]:  # fmt: skip
    """`fib_check.checked` in a child process capped at `memory_mb` (`fib_check`); past the cap, the static conversion and a note."""
    done = fib_check.checked_in_child(staging, file, converted, workloads, scalars, unknown, memory_mb, hints.notes)
    hints.notes[:] = done.notes
    if done.skipped is None:
        hints.notes.append(f"reference checked in a child process capped at --memory-mb {memory_mb} MB of address "
                           f"space (the verifier's sandbox limit): it ran within it")  # fmt: skip
        _write(staging, done.definition, done.workloads, scalars, file, hints.notes)
        return done.definition, done.workloads
    if unknown:
        raise ImportProblems(file, [f"const axis {', '.join(repr(a) for a in unknown)} has no value (the tracer could "
                                    f"not resolve it) and the reference check that would search one could not run "
                                    f"within --memory-mb {memory_mb} MB ({done.skipped}); give one with "
                                    + " ".join(f"--const {a}=N" for a in unknown)])  # fmt: skip
    hints.notes.append(f"{UNCHECKED} {memory_mb} MB: {done.skipped}; imported as --no-check would (static conversion), so the "
                       f"A/A too needs a larger --memory-mb or smaller const axes (--const)")  # fmt: skip
    _write(staging, converted, workloads, scalars, file, hints.notes)
    return converted, workloads


def _convert(raw: dict[str, Any], name: str | None, consts: dict[str, int],
             helpers: dict[str, str]) -> tuple[dict[str, Any] | None, fib_hints.Hints]:
    hints = fib_hints.Hints()
    for key in ("name", "axes", "inputs", "outputs"):
        if key not in raw:
            hints.problems.append(f"no {key!r} field")
    if hints.problems:
        return None, hints
    axes = {a: dict(s) for a, s in raw["axes"].items()}
    unknown: dict[str, list[int]] = {}
    for axis, spec in axes.items():
        if spec.get("type") == "const" and not isinstance(spec.get("value"), int) and axis not in consts:
            stated = re.search(r"\balways (\d+)\b", str(spec.get("description") or ""), re.IGNORECASE)
            if stated:
                spec["value"] = int(stated.group(1))
                hints.notes.append(f"const axis {axis!r} has no value; its description says {stated.group(0)!r}: "
                                   f"{spec['value']}")  # fmt: skip
            else:
                unknown[axis] = fib_oracle.const_candidates(axes)
                spec["value"] = unknown[axis][0]
        elif spec.get("type") == "const" and not isinstance(spec.get("value"), int):
            spec["value"] = 1
    for axis, value in consts.items():
        if axes.get(axis, {}).get("type") != "const":
            hints.problems.append(f"--const {axis}={value}: {axis!r} is not a const axis of this definition")
        else:
            hints.notes.append(f"const axis {axis} {axes[axis]['value']} -> {value} (--const)")
            axes[axis]["value"] = value
    if raw.get("reference"):
        found, _ = fib_reference.find_reference(raw["reference"])
        hints.required = found.required if found is not None else set()
    extra = _declare_missing_axes(raw, axes, hints, unknown)
    extra += _named_quotients(axes, list(raw.get("constraints") or []), hints, unknown)
    extra += _named_offsets(axes, list(raw.get("constraints") or []), hints)
    raw = {**raw, "axes": axes, "inputs": _dtype_scalars(raw, hints)}
    floats = [s.get("dtype") for s in raw["inputs"].values() if str(s.get("dtype", "")).startswith(("float", "bfloat"))]
    inputs = _map_tensors("input", raw["inputs"], floats, hints)
    outputs = _map_tensors("output", raw["outputs"], floats, hints)
    source = raw.get("reference")
    reference = _reference(raw, source, inputs, outputs, hints, helpers) if source else None
    if not source:
        hints.problems.append("no reference: flashinfer publishes this definition without one, so there is no ground truth")
    constraints, totals = fib_hints.split_constraints(list(raw.get("constraints") or []), set(axes), set(inputs), hints)
    scatters = frozenset(fib_hints.scatter_indices(source))
    structured = {n: s for n in inputs if (s := fib_hints.structure_for(n, raw["inputs"][n], inputs[n]["dtype"],
                                                                         totals, axes, raw["inputs"], scatters))}  # fmt: skip
    for input_name, spec in structured.items():
        hints.notes.append(f"input {input_name!r} drawn as {spec['kind']} ({spec.pop('why')})")
    definition = {
        "name": name or raw["name"], "op_type": raw.get("op_type") or "unknown", "axes": axes,
        "inputs": inputs, "outputs": outputs, "reference": reference or "def run():\n    pass\n",
        "tags": [*raw.get("tags", []), "source:flashinfer-trace"], "description": raw.get("description"),
        "constraints": [*constraints, *extra],
        "kloop": {"reference_float64": False, "structured": structured},
        "_unknown_consts": unknown,
    }  # fmt: skip
    return definition, hints


def _dtype_scalars(raw: dict[str, Any], hints: fib_hints.Hints) -> dict[str, Any]:
    """A scalar `dtype` input the tracer typed as an int enum is the outputs' torch dtype (`.to(dtype)`): fixed to it."""
    dtypes = {str(s.get("dtype")) for s in raw["outputs"].values()}
    kept = {}
    for iname, spec in raw["inputs"].items():
        if spec.get("shape") is None and iname in ("dtype", "out_dtype", "output_dtype") and len(dtypes) == 1 \
                and str(spec.get("dtype")).startswith("int") and next(iter(dtypes)).startswith(("float", "bfloat")):  # fmt: skip
            hints.fixed[iname] = f"torch.{next(iter(dtypes))}"
            hints.dropped.append(iname)
            hints.notes.append(f"input {iname!r} ({spec.get('dtype')}, {spec.get('description') or 'no description'}) is "
                               f"the output dtype: fixed to torch.{next(iter(dtypes))}, the dtype every output declares")  # fmt: skip
            continue
        kept[iname] = spec
    return kept


def _declare_missing_axes(raw: dict[str, Any], axes: dict[str, Any], hints: fib_hints.Hints,
                          unknown: dict[str, list[int]]) -> list[str]:  # fmt: skip
    """Axes the tracer used in shapes but did not declare, read from their names; returns constraints to add.

    `K_div_block_size` is K // block_size, `N_mul_2` is N * 2, `1` is 1. A divisor the definition never
    declares (`block_size` in `[K_div_block_size, N, block_size]`) is a const the reference check searches
    (`fib_oracle`); anything else is a var axis.
    """
    used = [a for role in ("inputs", "outputs") for s in raw[role].values() for a in (s.get("shape") or [])]
    added: list[str] = []

    def value(part: str) -> int | None:
        return int(part) if part.isdigit() else axes.get(part, {}).get("value")

    for axis in dict.fromkeys(used):
        if axis in axes:
            continue
        match = re.fullmatch(r"(\w+?)_(div|mul)_(\w+)", axis)
        if axis.isdigit():
            axes[axis] = {"type": "const", "value": int(axis)}
            hints.notes.append(f"axis {axis!r} is used but not declared: const {axis} (its name is a number)")
            continue
        if match is None:
            axes[axis] = {"type": "var"}
            hints.notes.append(f"axis {axis!r} is used but not declared: taken as a var axis")
            continue
        left, op, right = match.groups()
        if op == "div" and isinstance(value(left), int) and right not in axes and right in used:
            unknown[right] = fib_oracle.divisor_candidates(value(left) or 1)
            axes[right] = {"type": "const", "value": unknown[right][0]}
            axes[axis] = {"type": "var"}
            added.append(f"{axis} == {left} // {right}")
            hints.notes.append(f"axis {axis!r} is used but not declared: {left} // {right} (its name says so), with "
                               f"{right!r} a divisor of {left} the reference check searches")  # fmt: skip
            continue
        parts = [value(left), value(right)]
        if all(isinstance(p, int) and p > 0 for p in parts):
            result = parts[0] // parts[1] if op == "div" else parts[0] * parts[1]  # type: ignore[operator]
            axes[axis] = {"type": "const", "value": result}
            hints.notes.append(f"axis {axis!r} is used but not declared: const {result} (its name says "
                               f"{left} {'//' if op == 'div' else '*'} {right})")  # fmt: skip
        else:
            axes[axis] = {"type": "var"}
            hints.notes.append(f"axis {axis!r} is used but not declared: taken as a var axis")
    return added


def _named_quotients(axes: dict[str, Any], constraints: list[str], hints: fib_hints.Hints,
                     unknown: dict[str, list[int]]) -> list[str]:  # fmt: skip
    """`K_div_block == K // block` for a declared var axis named so, `K` a const, that no constraint defines.

    gemm_fp8_nt_groupwise declares `K_div_block` (a_scale's and b_scale's scale-block count) as a free
    var axis. The listed workloads happen to give a K it divides, but held-out draws perturb it alone
    (K_div_block 5: 7168 // 5 * 5 != 7168) and the reference fails on its own inputs. An undeclared
    divisor (`block`) is a const the reference check searches among the powers of two dividing every
    const it divides (128 first); axes that name the same divisor share it.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for axis, spec in axes.items():
        match = re.fullmatch(r"(\w+?)_div_(\w+)", axis)
        if spec.get("type") != "var" or match is None:
            continue
        left, right = match.groups()
        if not isinstance(axes.get(left, {}).get("value"), int) or axes[left].get("type") != "const":
            continue
        if any(re.search(rf"\b{re.escape(axis)}\b", text) for text in constraints):
            continue
        if right in axes and (axes[right].get("type") != "const" or right in unknown):
            continue
        groups.setdefault(right, []).append((axis, left))
    added: list[str] = []
    for right, pairs in groups.items():
        if right not in axes:
            common = math.gcd(*(axes[left]["value"] for _, left in pairs))
            unknown[right] = fib_oracle.divisor_candidates(common)
            axes[right] = {"type": "const", "value": unknown[right][0]}
        for axis, left in pairs:
            added.append(f"{axis} == {left} // {right}")
            searched = f", with {right!r} a divisor of {left} the reference check searches" if right in unknown else ""
            hints.notes.append(f"axis {axis!r} is {left} // {right} (its name says so): constraint "
                               f"'{axis} == {left} // {right}' added, so held-out draws keep it{searched}")  # fmt: skip
    return added


def _named_offsets(axes: dict[str, Any], constraints: list[str], hints: fib_hints.Hints) -> list[str]:
    """`batch_size_plus_1 == batch_size + 1` for a var axis named so that no constraint defines.

    Without the constraint the listed workloads still say `batch_size + 1` (`fib_sizes` reads the name),
    but held-out draws perturb the two axes independently and the reference fails on its own indptr.
    """
    added = []
    for axis, spec in axes.items():
        match = re.fullmatch(r"(\w+?)_plus_(\d+)", axis)
        if spec.get("type") != "var" or match is None or match.group(1) not in axes:
            continue
        if any(re.search(rf"\b{re.escape(axis)}\b", text) for text in constraints):
            continue
        text = f"{axis} == {match.group(1)} + {match.group(2)}"
        added.append(text)
        hints.notes.append(f"axis {axis!r} is {match.group(1)} + {match.group(2)} (its name says so): constraint {text!r} "
                           f"added, so held-out draws keep it")  # fmt: skip
    return added


def _map_tensors(role: str, tensors: dict[str, Any], floats: list[str], hints: fib_hints.Hints) -> dict[str, Any]:
    mapped: dict[str, Any] = {}
    for tname, spec in tensors.items():
        dtype = fib_hints.dtype_for(role, tname, spec, floats, hints)
        if dtype is None:
            continue
        entry = {"shape": spec.get("shape"), "dtype": dtype}
        if spec.get("description") is not None:
            entry["description"] = spec["description"]
        if spec.get("optional") and role == "input" and tname in hints.required:
            hints.notes.append(f"input {tname!r} is marked optional but the reference requires it: always given")
        elif spec.get("optional"):
            entry["optional"] = True
        mapped[tname] = entry
    return mapped


def _reference(raw: dict[str, Any], source: str, inputs: dict[str, Any], outputs: dict[str, Any],
               hints: fib_hints.Hints, helpers: dict[str, str]) -> str | None:  # fmt: skip
    if helpers:
        source, added = fib_reference.inline_helpers(source, helpers)
        if added:
            hints.notes.append(f"reference helpers inlined from --helpers: {', '.join(added)}")
    ref, problem = fib_reference.find_reference(source)
    if ref is None:
        hints.problems.append(problem or "reference not found")
        return None
    if missing := fib_reference.unresolved_names(source):
        hints.problems.append(f"reference uses {', '.join(missing)}, which it neither defines nor imports "
                              f"(helpers that live elsewhere in flashinfer)")  # fmt: skip
    for dropped, spec in raw["inputs"].items():
        if dropped in inputs or dropped in hints.dropped:
            continue
        value = fib_hints.literal_value(source, ref.name, dropped) or fib_hints.literal_value(raw.get("init"), None, dropped)
        if value is None and dropped not in ref.params:
            hints.notes.append(f"input {dropped!r} (dtype {spec.get('dtype')}) left out: the reference does not take it")
        elif value is None and dropped in ref.required:
            hints.problems.append(f"input {dropped!r} has dtype {spec.get('dtype')!r}, which FlashInfer-Trace cannot "
                                  f"carry, and neither the reference nor the init gives its value")  # fmt: skip
        elif value is not None:
            hints.fixed[dropped] = value
            hints.notes.append(f"input {dropped!r} (dtype {spec.get('dtype')}) fixed to {value}: FlashInfer-Trace "
                               f"cannot carry it")  # fmt: skip
    consts = {a: s["value"] for a, s in raw["axes"].items() if s.get("type") == "const" and "value" in s}
    binding = fib_reference.bind_by_name(ref, list(inputs), dict(hints.fixed), consts)
    binding.constants.update({p: v for p, v in hints.fixed.items() if p in ref.params})
    hints.notes.extend(binding.notes)
    hints.problems.extend(binding.problems)
    table = []
    for oname in list(outputs):
        kloop_name = oname
        if oname in inputs:
            kloop_name = _free_name(f"{oname}_out", set(inputs) | set(outputs))
            hints.notes.append(f"output {oname!r} is written in place into input {oname!r}: renamed {kloop_name!r}")
            outputs[kloop_name] = outputs.pop(oname)
        table.append((kloop_name, oname, outputs[kloop_name]["dtype"]))
    # an input with an output `NAME_out` (gdn's `conv_state` -> `conv_state_out`) is mutated by the reference too:
    # it gets a copy, so the caller's tensors stay as they were drawn
    inplace = [n for n in inputs if n in raw["outputs"] or f"{n}_out" in raw["outputs"]]
    flat = tuple(k for k, _, _ in table if len(outputs[k]["shape"] or []) == 1)
    return fib_reference.render_wrapper(source, ref, binding, list(inputs), table, hints.views, inplace, flat)


def _free_name(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name


def _scalars(raw: dict[str, Any], definition: dict[str, Any]) -> dict[str, Any]:
    """Scalar inputs: a const axis of the same name, else the reference's default, else the init's literal."""
    found: dict[str, Any] = {}
    consts = {a: s["value"] for a, s in definition["axes"].items() if s.get("type") == "const"}
    for sname, spec in definition["inputs"].items():
        if spec["shape"] is not None:
            continue
        value: Any = consts.get(sname)
        if value is None:
            text = fib_hints.literal_value(raw.get("reference"), None, sname) or fib_hints.literal_value(
                raw.get("init"), None, sname)
            value = _python_literal(text)
        if not isinstance(value, bool | int | float):
            value = _default_scalar(sname, spec["dtype"], consts)
        found[sname] = value
    return found


def _default_scalar(sname: str, dtype: str, consts: dict[str, int]) -> bool | int | float:
    """A fixed value for a scalar nothing names: every call of a workload must see the same one."""
    import math

    if dtype == "bool":
        return False
    if not dtype.startswith(("float", "bfloat")):
        return 1
    head = next((consts[a] for a in ("head_dim", "head_size", "head_dim_qk") if a in consts), None)
    return 1 / math.sqrt(head) if "sm_scale" in sname and head else 1.0


def _python_literal(text: str | None) -> Any:
    import ast

    try:
        return ast.literal_eval(text) if text else None
    except (ValueError, SyntaxError):
        return None
