"""Reading a KernelBench problem's source: its size variables, how to shrink them, how to name axes.

KernelBench states a problem's sizes as module-level integers (`batch_size = 16`,
`height = width = 128`, `M, N = 64, 32`, `input_shape = (4096,)`) that `get_inputs()` and
`get_init_inputs()` read. Shrinking a problem means rewriting those literals in the source
(so derived sizes, `dim2 = dim1 * 2`, follow), and naming an axis means reading which variable
`get_inputs()` passed to the tensor factory at that position. Pure `ast` work: no torch here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kloop.task.expr import ExpressionError, evaluate

MIN_SCALED = 16
"""Sizes below this are left alone by --scale: they are kernel sizes, channel counts, dims to reduce."""

FACTORIES = {"rand", "randn", "ones", "zeros", "empty", "full", "randint", "rand_like", "randn_like", "tensor"}


@dataclass(frozen=True)
class Literal:
    """One integer literal that sets a size variable (or one element of a size tuple)."""

    name: str
    index: int | None
    value: int
    span: tuple[int, int, int, int]  # lineno, col (bytes), end_lineno, end_col (bytes)


@dataclass
class ModuleSizes:
    """Module-level integers and integer tuples, in source order, with the literals behind them."""

    ints: dict[str, int] = field(default_factory=dict)
    tuples: dict[str, tuple[int, ...]] = field(default_factory=dict)
    tuple_elements: dict[str, list[str | None]] = field(default_factory=dict)
    literals: list[Literal] = field(default_factory=list)
    deps: dict[str, set[str]] = field(default_factory=dict)


def _value(node: ast.expr, env: dict[str, int]) -> int | None:
    try:
        value = evaluate(ast.unparse(node), env)
    except (ExpressionError, ZeroDivisionError, OverflowError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)


def _has_names(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


def module_sizes(source: str) -> ModuleSizes:
    """Every module-level `NAME = int`, `A = B = int`, `A, B = int, int` and `NAME = (int, ...)`."""
    sizes = ModuleSizes()
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                _assign(sizes, target.id, node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple | ast.List) \
                    and len(target.elts) == len(node.value.elts):  # fmt: skip
                for t, v in zip(target.elts, node.value.elts, strict=True):
                    if isinstance(t, ast.Name):
                        _assign(sizes, t.id, v)
    return sizes


def _assign(sizes: ModuleSizes, name: str, value: ast.expr) -> None:
    env = {**sizes.ints}
    if isinstance(value, ast.Tuple | ast.List):
        elements = [_value(e, env) for e in value.elts]
        if value.elts and all(e is not None for e in elements):
            sizes.tuples[name] = tuple(int(e) for e in elements if e is not None)
            sizes.tuple_elements[name] = [e.id if isinstance(e, ast.Name) and e.id in env else None for e in value.elts]
            sizes.deps[name] = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            for i, e in enumerate(value.elts):
                if not _has_names(e):
                    sizes.literals.append(Literal(name, i, int(elements[i] or 0), _span(e)))
        return
    number = _value(value, env)
    if number is None:
        return
    sizes.ints[name] = number
    sizes.deps[name] = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    if not _has_names(value):
        sizes.literals.append(Literal(name, None, number, _span(value)))


def _function(source: str, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def input_size_names(source: str, sizes: ModuleSizes, function: str = "get_inputs") -> set[str]:
    """Size variables `get_inputs()` (or `function`) reads, directly or through a derived size or a tuple."""
    fn = _function(source, function)
    if fn is None:
        return set()
    todo = [n.id for n in ast.walk(fn) if isinstance(n, ast.Name)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or (name not in sizes.ints and name not in sizes.tuples):
            continue
        seen.add(name)
        todo.extend(sizes.deps.get(name, ()))
    return seen


def scaled_value(value: int, factor: float) -> int:
    """`value * factor`, at least 1, kept a multiple of 8 when it was one and stays at least 8."""
    new = max(1, round(value * factor))
    if value % 8 == 0 and new >= 8:
        new = new // 8 * 8
    return min(new, value)


def scale_source(source: str, names: set[str], factor: float) -> tuple[str, dict[str, tuple[int, int]]]:
    """The source with the literals of `names` (those >= MIN_SCALED) scaled; and {label: (old, new)}."""
    sizes = module_sizes(source)
    lines = source.encode().splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    data = source.encode()
    changes: dict[str, tuple[int, int]] = {}
    edits: list[tuple[int, int, bytes]] = []
    done: dict[tuple[int, int, int, int], tuple[int, int]] = {}
    for lit in sizes.literals:
        if lit.name not in names or lit.value < MIN_SCALED:
            continue
        label = lit.name if lit.index is None else f"{lit.name}[{lit.index}]"
        if lit.span in done:  # `height = width = 128`: one literal, two names
            changes[label] = done[lit.span]
            continue
        new = scaled_value(lit.value, factor)
        done[lit.span] = (lit.value, new)
        if new == lit.value:
            continue
        line, col, end_line, end_col = lit.span
        edits.append((starts[line - 1] + col, starts[end_line - 1] + end_col, str(new).encode()))
        changes[label] = (lit.value, new)
    for begin, end, text in sorted(edits, reverse=True):
        data = data[:begin] + text + data[end:]
    return data.decode(), changes


def _factory_call(node: ast.AST) -> ast.Call | None:
    """The first torch tensor-factory call inside an expression (`torch.rand(...).abs() * 2`)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in FACTORIES:
            return sub
    return None


def _shape_nodes(call: ast.Call) -> list[ast.expr] | None:
    attr = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    size = next((k.value for k in call.keywords if k.arg == "size"), None)
    args = list(call.args)
    if size is None and attr == "randint":
        size = next((a for a in args if isinstance(a, ast.Tuple | ast.List)), None)
    if size is None and attr == "full" and args:
        size = args[0]
    if size is None and attr in {"rand", "randn", "ones", "zeros", "empty"}:
        if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
            size = args[0]
        else:
            return args
    if isinstance(size, ast.Tuple | ast.List):
        return list(size.elts)
    return None


def _dim_names(nodes: list[ast.expr], sizes: ModuleSizes) -> list[str | None]:
    names: list[str | None] = []
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in sizes.ints:
            names.append(node.id)
        elif isinstance(node, ast.Starred) and isinstance(node.value, ast.Name) and node.value.id in sizes.tuples:
            tup = node.value.id
            elements = sizes.tuple_elements[tup]
            for i, elem in enumerate(elements):
                names.append(elem or (tup if len(elements) == 1 else f"{tup}_{i}"))
        elif isinstance(node, ast.Starred):
            return []  # an unknown number of dims: positions can no longer be matched
        else:
            names.append(None)
    return names


def input_dim_names(source: str, sizes: ModuleSizes) -> list[list[str | None]] | None:
    """Per returned input, the size variable named at each dim of its factory call (None: unnamed)."""
    fn = _function(source, "get_inputs")
    if fn is None:
        return None
    calls: dict[str, ast.Call] = {}
    returned: ast.expr | None = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            call = _factory_call(node.value)
            if call is not None:
                calls[node.targets[0].id] = call
        if isinstance(node, ast.Return) and isinstance(node.value, ast.List | ast.Tuple):
            returned = node.value
    if returned is None:
        return None
    result: list[list[str | None]] = []
    for elt in returned.elts:
        call = calls.get(elt.id) if isinstance(elt, ast.Name) else _factory_call(elt)
        nodes = _shape_nodes(call) if call is not None else None
        result.append(_dim_names(nodes, sizes) if nodes is not None else [])
    return result
