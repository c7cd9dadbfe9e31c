"""A small, safe evaluator for the arithmetic a task states as text.

Definitions carry constraints (`num_v_heads % num_q_heads == 0`) and FLOP counts
(`2 * M * N * K`) as Python expressions. Task files are user input, so they are never
handed to `eval`: they are parsed with `ast` and walked here, allowing only numbers,
axis names, arithmetic, comparisons, boolean logic, conditionals and a few pure functions.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "int": int,
    "float": float,
}
_MAX_RESULT_BITS = 256  # keeps `9 ** 64 ** 64` from hanging the loader
_MAX_LENGTH = 2000


class ExpressionError(ValueError):
    """The expression is not in the allowed subset, or names something unknown."""


def parse_expression(text: str) -> ast.Expression:
    """Parse `text` as one expression and check it uses only the allowed subset."""
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"expression longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a valid expression: {text!r} ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply: {text[:40]!r}...") from None
    for node in ast.walk(tree):
        _check_node(node, text)
    return tree


def _check_node(node: ast.AST, text: str) -> None:
    allowed = (
        ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
        ast.Compare, ast.IfExp, ast.Call, ast.And, ast.Or,
        *_BINARY, *_UNARY, *_COMPARE,
    )  # fmt: skip
    if not isinstance(node, allowed):
        raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | bool):
        raise ExpressionError(f"only numbers are allowed as constants in {text!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(f"only {sorted(FUNCTIONS)} may be called in {text!r}")
        if node.keywords:
            raise ExpressionError(f"keyword arguments are not allowed in {text!r}")


def names_in(text: str) -> set[str]:
    """The variable names an expression reads (function names excluded)."""
    tree = parse_expression(text)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(text: str, variables: Mapping[str, int | float]) -> Any:
    """Evaluate `text` with `variables` bound; raises ExpressionError on anything else."""
    tree = parse_expression(text)
    try:
        return _eval(tree.body, variables, text)
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ExpressionError(f"{text!r} failed: {exc}") from None
    except RecursionError:
        raise ExpressionError(f"expression nested too deeply: {text[:40]!r}...") from None


def _eval(node: ast.AST, env: Mapping[str, int | float], text: str) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name not in env:
                raise ExpressionError(f"unknown name {name!r} in {text!r}")
            return env[name]
        case ast.BinOp(left=left, op=op, right=right):
            lhs, rhs = _eval(left, env, text), _eval(right, env, text)
            if isinstance(op, ast.Pow) and abs(lhs) > 1 and abs(rhs) * math.log2(abs(lhs)) > _MAX_RESULT_BITS:
                raise ExpressionError(f"{lhs} ** {rhs} is too large in {text!r}")
            return _BINARY[type(op)](lhs, rhs)
        case ast.UnaryOp(op=op, operand=operand):
            return _UNARY[type(op)](_eval(operand, env, text))
        case ast.BoolOp(op=ast.And(), values=values):
            return all(_eval(v, env, text) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return any(_eval(v, env, text) for v in values)
        case ast.Compare(left=left, ops=ops, comparators=rights):
            lhs = _eval(left, env, text)
            for op, right in zip(ops, rights, strict=True):
                rhs = _eval(right, env, text)
                if not _COMPARE[type(op)](lhs, rhs):
                    return False
                lhs = rhs
            return True
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body if _eval(test, env, text) else orelse, env, text)
        case ast.Call(func=ast.Name(id=fname), args=args):
            return FUNCTIONS[fname](*(_eval(a, env, text) for a in args))
    raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
