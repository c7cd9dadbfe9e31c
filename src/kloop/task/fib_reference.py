"""The reference of a published FlashInfer-Trace definition, made callable as kloop's `run`.

flashinfer dumps its references as `_<op>_reference(...)` (no top-level `run`), with parameter
names that are the API's and not always the definition's, extra parameters with defaults, and
results that may be a tuple, a dict, one tensor, or nothing at all (an in-place op that writes
its inputs). `find_reference` reads the source with `ast` (nothing runs) and `render_wrapper`
appends a `run` whose parameters are the definition's inputs in order and which calls the
reference **by keyword**, so an argument order that differs from the definition's (the MoE
references) cannot bind silently wrong.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Binding", "RefFunction", "bind_by_name", "find_reference", "helper_table", "inline_helpers", "render_wrapper",
           "unresolved_names"]


@dataclass(frozen=True)
class RefFunction:
    """The reference function the definition's source defines."""

    name: str
    params: list[str]
    """Positional-or-keyword and keyword-only parameter names, in order."""
    required: set[str]
    """Parameters without a default."""
    var_keyword: bool


@dataclass
class Binding:
    """How each reference parameter gets its value."""

    from_input: dict[str, str] = field(default_factory=dict)
    """Reference parameter -> definition input name."""
    constants: dict[str, str] = field(default_factory=dict)
    """Reference parameter -> Python source of a fixed value (a string input, a const axis, None)."""
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def find_reference(source: str) -> tuple[RefFunction | None, str | None]:
    """The entry function: a top-level `run`, else the last top-level `*_reference` no other calls."""
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        return None, f"reference is not valid Python: {exc.msg} (line {exc.lineno})"
    functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    chosen = next((f for f in functions if f.name == "run"), None)
    if chosen is None:
        candidates = [f for f in functions if f.name.endswith("_reference")]
        called = {n.func.id for n in ast.walk(module) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        roots = [f for f in candidates if f.name not in called] or candidates
        if not roots:
            return None, "reference defines neither `run` nor a `_<name>_reference` function"
        chosen = roots[-1]
    args = chosen.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    defaults = positional[len(positional) - len(args.defaults):] if args.defaults else []
    kwonly = [a.arg for a in args.kwonlyargs]
    required = {p for p in positional if p not in defaults}
    required |= {a for a, d in zip(kwonly, args.kw_defaults, strict=True) if d is None}
    if args.posonlyargs:
        return None, f"reference {chosen.name} has positional-only parameters; kloop binds by name"
    return RefFunction(chosen.name, positional + kwonly, required, args.kwarg is not None), None


def unresolved_names(source: str) -> list[str]:
    """Names the reference reads but never binds or imports: helpers that live elsewhere in flashinfer."""
    module = ast.parse(source)
    bound: set[str] = set(dir(builtins)) | {"__file__", "__name__"}
    loads: list[str] = []
    annotations = {id(n) for node in ast.walk(module) for n in _annotation_nodes(node)}
    for node in ast.walk(module):
        if id(node) in annotations:
            continue  # `from __future__ import annotations`: Optional, Tuple are never evaluated
        if isinstance(node, ast.Name):
            (loads.append(node.id) if isinstance(node.ctx, ast.Load) else bound.add(node.id))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return sorted({n for n in loads if n not in bound})


def _annotation_nodes(node: ast.AST) -> list[ast.AST]:
    roots: list[ast.AST] = []
    if isinstance(node, ast.arg) and node.annotation is not None:
        roots.append(node.annotation)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
        roots.append(node.returns)
    elif isinstance(node, ast.AnnAssign):
        roots.append(node.annotation)
    return [n for root in roots for n in ast.walk(root)]


def bind_by_name(ref: RefFunction, inputs: list[str], fixed: dict[str, object],
                 consts: dict[str, int] | None = None) -> Binding:
    """Bind every reference parameter by name: exact, then ignoring case, then the one pair left.

    `fixed` holds values for definition inputs that do not survive into kloop's definition
    (strings, dtypes): they are passed as constants.
    """
    binding = Binding()
    free = [n for n in inputs if n not in fixed]
    lower = {n.lower(): n for n in free}
    unbound: list[str] = []
    for param in ref.params:
        if param in fixed:
            binding.constants[param] = fixed[param]
        elif param in free:
            binding.from_input[param] = param
        elif param.lower() in lower and lower[param.lower()] not in binding.from_input.values():
            binding.from_input[param] = lower[param.lower()]
            binding.notes.append(f"reference parameter {param!r} bound to input {lower[param.lower()]!r} (names differ in case)")
        elif consts and param in consts:
            binding.constants[param] = repr(consts[param])
            binding.notes.append(f"reference parameter {param!r} gets const axis {param} = {consts[param]}")
        elif param in ref.required and param.endswith("kv_cache") and {"k_cache", "v_cache"} <= set(free):
            binding.constants[param] = "(k_cache, v_cache)"
            binding.notes.append(f"reference parameter {param!r} gets the tuple (k_cache, v_cache) of the inputs")
        elif param in ref.required and "workspace" in param:
            binding.constants[param] = "None"
            binding.notes.append(f"reference parameter {param!r} (a device scratch buffer) gets None")
        elif param in ref.required:
            unbound.append(param)
    unused = [n for n in free if n not in binding.from_input.values()]
    if len(unbound) == 1 and len([u for u in unused if u not in ref.params]) == 1:
        only = next(u for u in unused if u not in ref.params)
        binding.from_input[unbound[0]] = only
        binding.notes.append(f"reference parameter {unbound[0]!r} bound to input {only!r}, the only input "
                             f"left without a parameter of its name")  # fmt: skip
        unused.remove(only)
        unbound = []
    for param in unbound:
        binding.problems.append(f"reference {ref.name} needs parameter {param!r}, which no definition input names "
                                f"(inputs: {', '.join(free)})")  # fmt: skip
    if ref.var_keyword:
        binding.from_input.update({n: n for n in unused})
    elif unused:
        binding.notes.append(f"inputs the reference does not take (passed to solutions only): {', '.join(unused)}")
    return binding


_WRAPPER = '''

# ---- added by `kloop task import-fib`: the FlashInfer-Trace entry point, binding inputs by name ----
import torch as _kloop_torch

_KLOOP_OUTPUTS = {outputs!r}  # (kloop output name, published name, dtype, parameter it is written to in place)
_KLOOP_VIEWS = {views!r}  # input -> the dtype the reference expects (same bytes, reinterpreted)
_KLOOP_INPLACE = {inplace!r}  # inputs that are also outputs: the reference writes a copy
_KLOOP_FLAT = {flat!r}  # outputs declared 1-D: a multi-dim result is flattened (row-major, same values)


def _kloop_dtype(name):
    return getattr(_kloop_torch, name)


def _kloop_out(value, dtype):
    if not isinstance(value, _kloop_torch.Tensor):
        return value
    target = _kloop_dtype(dtype)
    if value.dtype == target:
        return value
    if value.element_size() == target.itemsize and not value.is_floating_point() and not target.is_floating_point:
        return value.view(target)  # uint8 / uint32 storage in kloop's int8 / int32
    return value.to(target)


def _kloop_collect(result, kwargs):
    """The reference's result in kloop's output order: a tuple, a dict by name, one tensor, or None (in place)."""
    if result is None:
        result = tuple(kwargs[param] if param else None for _, _, _, param in _KLOOP_OUTPUTS)
    elif isinstance(result, dict):
        result = tuple(result[src] for _, src, _, _ in _KLOOP_OUTPUTS)
    elif not isinstance(result, (tuple, list)):
        result = (result,)
    if len(result) < len(_KLOOP_OUTPUTS):  # returns the new values, writes the in-place ones into its inputs
        returned = iter(result)
        result = tuple(kwargs[param] if param and len(result) < len(_KLOOP_OUTPUTS) else next(returned, None)
                       for _, _, _, param in _KLOOP_OUTPUTS)
    if len(result) < len(_KLOOP_OUTPUTS) or any(v is None for v in result[:len(_KLOOP_OUTPUTS)]):
        raise ValueError(f"reference returned {{len(result)}} values, the definition has {{len(_KLOOP_OUTPUTS)}} outputs")
    values = tuple(_kloop_out(v.reshape(-1) if k in _KLOOP_FLAT and isinstance(v, _kloop_torch.Tensor) and v.dim() > 1
                              else v, d) for v, (k, _, d, _) in zip(result, _KLOOP_OUTPUTS))
    return values[0] if len(values) == 1 else values


def run({params}):
    kwargs = {{{kwargs}}}
    for name in _KLOOP_INPLACE:
        if isinstance(kwargs.get(name), _kloop_torch.Tensor):
            kwargs[name] = kwargs[name].clone()
    for name, dtype in _KLOOP_VIEWS.items():
        if isinstance(kwargs.get(name), _kloop_torch.Tensor):
            kwargs[name] = kwargs[name].view(_kloop_dtype(dtype))
    return _kloop_collect({function}(**kwargs), kwargs)
'''


def render_wrapper(source: str, ref: RefFunction, binding: Binding, inputs: list[str],
                   outputs: list[tuple[str, str, str]], views: dict[str, str], inplace: list[str],
                   flat: tuple[str, ...] = ()) -> str:  # fmt: skip
    """The reference source plus a `run(<inputs in definition order>)` that calls it by keyword."""
    pairs = [f"{param!r}: {name}" for param, name in binding.from_input.items()]
    pairs += [f"{param!r}: {value}" for param, value in binding.constants.items()]  # values are Python source
    by_param = {name: param for param, name in binding.from_input.items()}
    param_views = {by_param[n]: d for n, d in views.items() if n in by_param}
    param_inplace = [by_param[n] for n in inplace if n in by_param]
    table = [(kloop, src, dtype, by_param.get(src)) for kloop, src, dtype in outputs]
    return source.rstrip() + "\n" + _WRAPPER.format(
        outputs=table, views=param_views, inplace=param_inplace, flat=list(flat), params=", ".join(inputs),
        kwargs=", ".join(pairs), function=ref.name)  # fmt: skip


def helper_table(paths: list[Path]) -> dict[str, str]:
    """Top-level functions, constants and imports of Python files (or folders of them), by the name they bind."""
    table: dict[str, str] = {}
    files = [f for p in paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            module = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        lines = text.splitlines()
        for node in module.body:
            start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            segment = "\n".join(lines[start - 1 : node.end_lineno])
            for bound in _bound_names(node):
                table.setdefault(bound, segment)
    return table


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.Import | ast.ImportFrom) and not (isinstance(node, ast.ImportFrom) and node.level):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return []


def inline_helpers(source: str, table: dict[str, str]) -> tuple[str, list[str]]:
    """Append the definitions of names the reference uses but lacks, found in `table`, transitively."""
    added: list[str] = []
    for _ in range(20):
        missing = [n for n in unresolved_names(source) if n in table and table[n] not in source]
        if not missing:
            break
        for name in missing:
            if table[name] not in source:
                source = source.rstrip() + "\n\n\n" + table[name] + "\n"
                added.append(name)
    return source, added
