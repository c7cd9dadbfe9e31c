"""Safe expressions over named numbers, on `simpleeval`: one engine, one dialect per use.

Task files state constraints and FLOP counts as text (`2 * M * N * K`), the playbook states
conditions and gains (`dram_pct >= 60 and default(l2_hit, 0) < 50`). Both are user input, so
neither reaches Python's `eval`: simpleeval walks the tree with the operators and functions a
`Dialect` names, and `parse` checks every node against the dialect before anything runs (a
task or rules file is refused when it is loaded, not when an expression first fires).

simpleeval does the evaluation; two playbook rules are kloop's own, written as small overrides:
a name missing from the context raises `Missing` (an unmeasured metric), and `and`/`or` count
a missing operand as false, so a rule whose metric the profiler did not read simply does not
fire. Functions marked lazy (`default(name, x)`, `known(name)`) see their arguments unevaluated.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simpleeval import InvalidExpression, SimpleEval

__all__ = ["Dialect", "Expression", "ExpressionError", "Missing", "parse"]

MAX_LENGTH = 2000
MAX_RESULT_BITS = 256  # keeps `9 ** 64 ** 64` from hanging a loader


class ExpressionError(ValueError):
    """The text is not in the dialect, or evaluating it failed."""


class Missing(Exception):
    """A name the expression needs is absent from (or None in) the context."""


def bounded_power(base: Any, exponent: Any) -> Any:
    if abs(base) > 1 and abs(exponent) * math.log2(abs(base)) > MAX_RESULT_BITS:
        raise ExpressionError(f"{base} ** {exponent} is too large")
    return operator.pow(base, exponent)


COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}  # fmt: skip
LazyFunction = Callable[["_Evaluator", list[ast.expr]], Any]


@dataclass(frozen=True)
class Dialect:
    """What one kind of expression may use: operators, functions, constants and node kinds."""

    operators: dict[type, Callable[..., Any]]
    functions: dict[str, Callable[..., Any]]
    lazy: dict[str, LazyFunction] = field(default_factory=dict)
    constants: tuple[type, ...] = (int, float, bool)
    conditionals: bool = False
    missing_is_false: bool = False

    def allowed_nodes(self) -> tuple[type, ...]:
        nodes = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                 ast.Compare, ast.Call, ast.And, ast.Or, *self.operators)
        return (*nodes, ast.IfExp) if self.conditionals else nodes


class _Evaluator(SimpleEval):
    """simpleeval restricted to a dialect's nodes, reading names from one context."""

    def __init__(self, dialect: Dialect, context: Mapping[str, Any]) -> None:
        super().__init__(operators=dialect.operators, functions=dict(dialect.functions), names={})
        allowed = dialect.allowed_nodes()
        self.nodes = {kind: handler for kind, handler in self.nodes.items() if kind in allowed}
        self.dialect, self.context = dialect, context

    def _eval_name(self, node: ast.Name) -> Any:
        value = self.context.get(node.id)
        if value is None:
            raise Missing(node.id)
        return value

    def _eval_call(self, node: ast.Call) -> Any:
        lazy = self.dialect.lazy.get(node.func.id)  # type: ignore[attr-defined]
        return lazy(self, node.args) if lazy else super()._eval_call(node)

    def _eval_boolop(self, node: ast.BoolOp) -> Any:
        if not self.dialect.missing_is_false:
            return super()._eval_boolop(node)
        results = []
        for value in node.values:
            try:
                results.append(bool(self._eval(value)))
            except Missing:
                results.append(False)
        return all(results) if isinstance(node.op, ast.And) else any(results)


@dataclass(frozen=True)
class Expression:
    """A parsed, checked expression: its text, tree (the expression node) and the names it reads."""

    text: str
    tree: ast.expr
    names: frozenset[str]
    dialect: Dialect

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The value in `context`; `Missing` when a name is absent, `ExpressionError` on simpleeval's refusals."""
        try:
            return _Evaluator(self.dialect, context).eval(self.text, previously_parsed=self.tree)
        except InvalidExpression as exc:
            raise ExpressionError(f"{self.text!r}: {exc}") from None


def parse(text: str, dialect: Dialect) -> Expression:
    """Parse `text` and check every node against `dialect`; `ExpressionError` names the offending part."""
    text = str(text).strip()
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a valid expression: {text!r} ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply: {text[:40]!r}...") from None
    callable_names = {*dialect.functions, *dialect.lazy}
    called: set[int] = set()
    for node in ast.walk(tree):
        _check(node, text, dialect, callable_names)
        if isinstance(node, ast.Call):
            called.add(id(node.func))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}
    return Expression(text, tree.body, frozenset(names), dialect)


def _check(node: ast.AST, text: str, dialect: Dialect, callable_names: set[str]) -> None:
    if not isinstance(node, dialect.allowed_nodes()):
        raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
    if isinstance(node, ast.Constant) and (type(node.value) not in dialect.constants):
        raise ExpressionError(f"constant {node.value!r} is not allowed in {text!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in callable_names or node.keywords:
            raise ExpressionError(f"only {sorted(callable_names)} may be called (no keywords) in {text!r}")
        if node.func.id in dialect.lazy and (not node.args or not isinstance(node.args[0], ast.Name)):
            raise ExpressionError(f"{node.func.id}() takes a name first in {text!r}")
