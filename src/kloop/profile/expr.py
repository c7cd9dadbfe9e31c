"""The playbook dialect of `kloop.expr`: conditions, thresholds and gain formulas in rules.yaml.

Numbers, strings, metric names, + - * /, comparisons, and/or/not and the functions below; a
name missing from the context makes the expression `Missing`, so a rule whose metric the tool
did not measure does not fire, and `and`/`or` count a missing operand as false.
`default(name, value)` and `known(name)` opt out, reading the name without failing.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simpleeval import safe_add, safe_mult

from kloop.expr import COMPARISONS, Dialect, ExpressionError, Missing
from kloop.expr import Expression as _Expression
from kloop.expr import parse as _parse

__all__ = ["FUNCTIONS", "PLAYBOOK", "SPECIAL", "Expression", "ExpressionError", "Missing", "parse"]


def _divide(a: Any, b: Any) -> Any:
    """x / 0 is +inf for a positive x, else 0: a ratio over an idle counter never raises."""
    return a / b if b else math.inf if a > 0 else 0.0


def _default(ev: Any, args: list[ast.expr]) -> Any:
    value = ev.context.get(args[0].id)  # type: ignore[attr-defined]
    return value if value is not None else ev._eval(args[1])


def _known(ev: Any, args: list[ast.expr]) -> bool:
    return ev.context.get(args[0].id) is not None  # type: ignore[attr-defined]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "abs": abs, "floor": math.floor, "ceil": math.ceil,
    "clamp": lambda x, lo, hi: max(lo, min(hi, x)),
}  # fmt: skip
SPECIAL = {"default", "known"}  # evaluated lazily: default(name, value), known(name)

PLAYBOOK = Dialect(
    operators={ast.Add: safe_add, ast.Sub: operator.sub, ast.Mult: safe_mult, ast.Div: _divide,  # strings bounded
               ast.USub: operator.neg, ast.Not: operator.not_, **COMPARISONS},
    functions=FUNCTIONS, lazy={"default": _default, "known": _known}, constants=(int, float, bool, str),
    missing_is_false=True,
)


@dataclass(frozen=True)
class Expression(_Expression):
    """A playbook expression (`Expression(text, tree, names)` builds one from a sub-tree)."""

    dialect: Dialect = PLAYBOOK


def parse(text: str) -> Expression:
    """Parse and check `text` against the playbook dialect; raises ExpressionError naming the offending part."""
    parsed = _parse(text, PLAYBOOK)
    return Expression(parsed.text, parsed.tree, parsed.names)
