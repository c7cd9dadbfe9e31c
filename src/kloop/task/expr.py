"""The task dialect of `kloop.expr`: arithmetic a task states as text (constraints, FLOP counts).

Definitions carry constraints (`num_v_heads % num_q_heads == 0`) and FLOP counts (`2 * M * N * K`)
as Python expressions; task files are user input, so they go through simpleeval (`kloop.expr`)
with numbers, axis names, arithmetic, comparisons, boolean logic, conditionals and a few pure
functions only, never through `eval`.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from kloop.expr import COMPARISONS, Dialect, ExpressionError, Missing, bounded_power, parse

__all__ = ["FUNCTIONS", "TASK", "ExpressionError", "evaluate", "names_in"]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs, "ceil": math.ceil, "floor": math.floor, "log2": math.log2,
    "sqrt": math.sqrt, "int": int, "float": float,
}  # fmt: skip

TASK = Dialect(
    operators={ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: bounded_power,
               ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, **COMPARISONS},
    functions=FUNCTIONS, conditionals=True,
)


def names_in(text: str) -> set[str]:
    """The variable names an expression reads (function names excluded)."""
    return set(parse(text, TASK).names)


def evaluate(text: str, variables: Mapping[str, int | float]) -> Any:
    """Evaluate `text` with `variables` bound; raises ExpressionError on anything else."""
    expression = parse(text, TASK)
    try:
        return expression.evaluate(variables)
    except Missing as exc:
        raise ExpressionError(f"unknown name {exc.args[0]!r} in {text!r}") from None
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ExpressionError(f"{text!r} failed: {exc}") from None
    except RecursionError:
        raise ExpressionError(f"expression nested too deeply: {text[:40]!r}...") from None
