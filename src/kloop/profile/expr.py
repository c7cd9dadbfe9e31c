"""A tiny, safe expression language for playbook conditions, thresholds and gain formulas.

Text is parsed with `ast` and only whitelisted nodes are evaluated (numbers, strings, names,
+ - * /, comparisons, and/or/not, and the functions in `FUNCTIONS`); nothing is ever passed to
Python's `eval`. A name missing from the context makes the whole expression `Missing`, so a
rule whose metric the tool did not measure simply does not fire; `default(name, value)` opts out.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class Missing(Exception):
    """A name the expression needs is absent from the context."""


class ExpressionError(ValueError):
    """The text is not a valid playbook expression."""


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b if b else math.inf if a > 0 else 0.0,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "clamp": lambda x, lo, hi: max(lo, min(hi, x)),
}
SPECIAL = {"default", "known"}  # evaluated lazily: default(name, value), known(name)


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its source text, tree and the context names it reads."""

    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The value in `context`; raises Missing when a needed name is absent."""
        return _eval(self.tree, context)


def parse(text: str) -> Expression:
    """Parse and whitelist-check `text`; raises ExpressionError naming the offending part."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text!r}: {exc.msg}") from exc
    names: set[str] = set()
    for node in ast.walk(tree):
        _check(node, text)
        if isinstance(node, ast.Name) and node.id not in FUNCTIONS and node.id not in SPECIAL:
            names.add(node.id)
    return Expression(str(text), tree, frozenset(names))


_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp, ast.Compare,
    ast.Name, ast.Load, ast.Constant, ast.Call,
    *_BINARY, *_COMPARE,
)  # fmt: skip


def _check(node: ast.AST, text: str) -> None:
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed")
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | str):
        raise ExpressionError(f"{text!r}: constant {node.value!r} is not allowed")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in {*FUNCTIONS, *SPECIAL} or node.keywords:
            raise ExpressionError(f"{text!r}: only {sorted({*FUNCTIONS, *SPECIAL})} may be called")
        if node.func.id in SPECIAL and (not node.args or not isinstance(node.args[0], ast.Name)):
            raise ExpressionError(f"{text!r}: {node.func.id}() takes a metric name first")


def _eval(node: ast.expr, ctx: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = ctx.get(node.id)
        if value is None:
            raise Missing(node.id)
        return value
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, ctx), _eval(node.right, ctx))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, ctx)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, ctx)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, ctx)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, ctx)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _call(node, ctx)


def _bool_op(node: ast.BoolOp, ctx: Mapping[str, Any]) -> bool:
    """and/or where a missing operand counts as false (an unmeasured condition does not hold)."""
    results = []
    for value in node.values:
        try:
            results.append(bool(_eval(value, ctx)))
        except Missing:
            results.append(False)
    return all(results) if isinstance(node.op, ast.And) else any(results)


def _call(node: ast.Call, ctx: Mapping[str, Any]) -> Any:
    name = node.func.id  # type: ignore[union-attr]
    if name == "known":
        return ctx.get(node.args[0].id) is not None  # type: ignore[attr-defined]
    if name == "default":
        value = ctx.get(node.args[0].id)  # type: ignore[attr-defined]
        return value if value is not None else _eval(node.args[1], ctx)
    return FUNCTIONS[name](*(_eval(arg, ctx) for arg in node.args))
