"""What a published FlashInfer-Trace definition says beyond its schema: dtypes, structure, scalars.

flashinfer's tracer writes dtypes kloop cannot take as they are (`unknown` where it saw no
tensor, `uint8` for packed FP4 bytes, `uint32`, `float64`, `string` and `dtype` for Python
arguments), constraints over tensors (`num_kv_indices == kv_indptr[-1].item()`), and leaves the
structure of index inputs to their names and descriptions. Each function here turns one of those
into kloop's form and says what it did (a note) or why it cannot (a problem). No torch import.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kloop.task.expr import ExpressionError, names_in
from kloop.task.schema import DType

__all__ = ["Hints", "dtype_for", "literal_value", "scatter_indices", "split_constraints", "structure_for"]

_NATIVE = {d.value for d in DType} - {DType.FLOAT4_E2M1.value}
_VIEWS = {"uint8": "int8", "uint32": "int32", "uint16": "int16"}
_INDEX = re.compile(r"(indptr|indices|_ids$|^ids$|positions|pos_ids|seqlens|seq_lens|lens$|offsets|block_tables|"
                    r"page_table|_idx$|slot_mapping)")  # fmt: skip
_TENSOR_TOTAL = re.compile(r"^\s*(\w+)\s*==\s*(\w+)\[-1\]\.item\(\)\s*$")


@dataclass
class Hints:
    """What the importer learnt, to apply to kloop's definition."""

    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    views: dict[str, str] = field(default_factory=dict)
    """Input -> the dtype the reference sees (kloop stores the same bytes as a signed type)."""
    out_views: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, str] = field(default_factory=dict)
    """Dropped input -> Python source of the constant the reference gets."""
    dropped: list[str] = field(default_factory=list)
    required: set[str] = field(default_factory=set)
    """Reference parameters without a default: an input they name is never left out."""


def dtype_for(role: str, name: str, spec: dict[str, Any], others: list[str], hints: Hints) -> str | None:
    """kloop's dtype for one tensor, or None when it leaves the definition (hints say why)."""
    raw = str(spec.get("dtype"))
    if raw in _NATIVE:
        return raw
    if raw in _VIEWS:
        (hints.views if role == "input" else hints.out_views)[name] = raw
        hints.notes.append(f"{role} {name!r}: dtype {raw} is stored as {_VIEWS[raw]} (same bytes; FlashInfer-Trace "
                           f"has no {raw}); the reference still sees {raw}")  # fmt: skip
        return _VIEWS[raw]
    if raw == "float64" and spec.get("shape") is None:
        hints.notes.append(f"{role} {name!r}: float64 scalar passed as a Python float (dtype float32 in the definition)")
        return "float32"
    if raw == "unknown":
        return _unknown(role, name, spec, others, hints)
    if raw in ("string", "dtype") and role == "input":
        return None  # the caller fixes it to a constant (or reports that it cannot)
    hints.problems.append(f"{role} {name!r}: dtype {raw!r} has no FlashInfer-Trace equivalent "
                          f"(known: {', '.join(sorted(_NATIVE | set(_VIEWS)))})")  # fmt: skip
    return "float32"


def _unknown(role: str, name: str, spec: dict[str, Any], others: list[str], hints: Hints) -> str | None:
    described = (spec.get("description") or "").lower()
    if role == "input" and spec.get("optional") and name not in hints.required:
        hints.dropped.append(name)
        hints.notes.append(f"optional input {name!r} has dtype 'unknown': left out, the reference gets its default")
        return None
    if _INDEX.search(name.lower()):
        guess, why = "int32", "an index name"
    elif name.lower() == "mask" or "boolean" in described:
        guess, why = "bool", "a mask"
    elif match := re.search(r"\((float32|float16|bfloat16|int32|int64)\)", described):
        guess, why = match.group(1), "its description"
    elif others:
        guess, why = max(set(others), key=others.count), "the other float inputs"
    else:
        hints.problems.append(f"{role} {name!r}: dtype 'unknown' and nothing in the definition tells it")
        return "float32"
    hints.notes.append(f"{role} {name!r}: dtype 'unknown' taken as {guess} (from {why})")
    return guess


def literal_value(source: str | None, function: str | None, key: str) -> str | None:
    """Python source of a constant for `key`: a parameter default of `function`, or a literal the
    init returns under that key (`"kv_layout": "NHD"`, `"out_dtype": torch.bfloat16`)."""
    if not source:
        return None
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and (function is None or node.name == function):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                if arg.arg == key and _is_constant(default):
                    return ast.unparse(default)
        if function is None and isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key and _is_constant(v):
                    return ast.unparse(v)
    return None


def _is_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch"


def split_constraints(constraints: list[str], axes: set[str], inputs: set[str], hints: Hints) -> tuple[list[str], dict[str, str]]:
    """(constraints kloop can check over axes, indptr totals read off `AX == T[-1].item()`)."""
    kept: list[str] = []
    totals: dict[str, str] = {}
    for text in constraints:
        match = _TENSOR_TOTAL.match(text)
        if match and match.group(2) in inputs and match.group(1) in axes:
            totals[match.group(2)] = match.group(1)
            continue
        try:
            unknown = names_in(text) - axes
        except ExpressionError:
            hints.notes.append(f"constraint {text!r} left out: kloop checks only arithmetic over axes")
            continue
        if unknown:
            hints.notes.append(f"constraint {text!r} left out: it names {sorted(unknown)}, which are not axes")
            continue
        kept.append(text)
    return kept, totals


_SCATTERS = {"index_copy_": 1, "index_copy": 1, "index_put_": 0, "index_put": 0, "scatter_": 1, "scatter": 1}
"""Tensor methods that write at an index tensor (argument position of the index): a repeated index makes
the result depend on the order of the writes, which no kernel has to follow."""


def scatter_indices(source: str | None) -> set[str]:
    """Names whose values the reference uses as write destinations (`x.index_copy_(0, idx, v)`, `x[idx] = v`).

    `idx = state_indices.to(torch.long)` makes `state_indices` one: taint follows conversions, method
    calls and subscripts of a name (not the names inside a subscript's brackets, nor arithmetic).
    """
    if not source:
        return set()
    try:
        module = ast.parse(source)
    except SyntaxError:
        return set()
    derived: dict[str, set[str]] = {}

    def roots(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Name):
            return {node.id} | derived.get(node.id, set())
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
            return roots(node.value)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                return roots(node.func.value)
            return roots(node.args[0]) if node.args else set()
        return set()

    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                derived[target.id] = derived.get(target.id, set()) | roots(node.value)  # type: ignore[union-attr]
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SCATTERS:
            position = _SCATTERS[node.func.attr]
            if len(node.args) > position:
                found |= roots(node.args[position])
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Tuple | ast.Slice):
                    found |= roots(target.slice)
    return found


def structure_for(name: str, spec: dict[str, Any], dtype: str, totals: dict[str, str], axes: dict[str, Any],
                  inputs: dict[str, Any], scatters: frozenset[str] = frozenset()) -> dict[str, Any] | None:  # fmt: skip
    """A `kloop.structured` entry for an input whose name, description or constraints show structure.

    An index input the reference writes at (`scatters`) is drawn without repeats: with two equal indices
    the reference's result depends on which write lands last, so its own A/A disagrees.
    """
    shape = spec.get("shape") or []
    low = name.lower()
    described = (spec.get("description") or "").lower()
    integer = dtype.startswith("int")
    if integer and len(shape) == 1 and (name in totals or "indptr" in low or "cu_seqlens" in low):
        total = totals.get(name) or _token_axis(name, inputs, axes, shape[0])
        if total is not None:
            why = "constraint" if name in totals else "name"
            return {"kind": "indptr", "total": total, "why": f"{why}: {name} ends at {total}"}
    if integer and _INDEX.search(low):
        high = _index_range(low, described, axes, inputs, name)
        if high is not None:
            scattered = name in scatters
            why = f"name: {name} indexes {high}" + ("; the reference writes at these indices, so no repeats" if scattered else "")
            return {"kind": "index", "high": high, "unique": "page" in low or "kv_indices" in low or scattered,
                    "why": why}  # fmt: skip
    if not integer and ("probs" in low or "probabilit" in described) and shape:
        return {"kind": "probs", "why": f"name: {name} holds probability rows"}
    return None


def _token_axis(name: str, inputs: dict[str, Any], axes: dict[str, Any], length_axis: str) -> str | None:
    """The axis an indptr without a constraint ends at: its CSR partner's length (`kv_indptr` -> `kv_indices`),
    else the leading axis of the ragged tensors."""
    prefix = name.lower().split("indptr")[0].split("cu_seqlens")[0].strip("_")
    stem = name[: name.lower().find("indptr")] if "indptr" in name.lower() else None
    partner = inputs.get(f"{stem}indices") if stem else None
    if partner is not None and len(partner.get("shape") or []) == 1:
        return partner["shape"][0]
    candidates: list[str] = []
    for other, spec in inputs.items():
        shape = spec.get("shape") or []
        if other == name or not shape or shape[0] == length_axis or axes.get(shape[0], {}).get("type") != "var":
            continue
        if prefix and not other.lower().startswith(prefix[0]):
            continue
        candidates.append(shape[0])
    return max(set(candidates), key=candidates.count) if candidates else None


def _index_range(low: str, described: str, axes: dict[str, Any], inputs: dict[str, Any], name: str) -> str | None:
    """The axis an index input counts in: pages, tokens, batch entries, experts, sequence positions."""
    table = (("kv_indices", "num_pages"), ("page", "num_pages"), ("block_tables", "num_pages"),
             ("batch_indices", "batch_size"), ("topk_ids", "num_experts"), ("expert", "num_experts"),
             ("pos", "max_seq_len"), ("state_indices", "num_pages"), ("state_indices", "pool_size"),
             ("indices", "vocab_size"))  # fmt: skip
    for needle, axis in table:
        if needle in low and axis in axes:
            return axis
    if "seq_len" in low or "lens" in low:
        return None  # lengths are bounded by a capacity only the reference knows
    return None
