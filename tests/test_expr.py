"""One safe-expression engine (simpleeval, `kloop.expr`) for task arithmetic and playbook rules.

Hostile text is refused when parsed (task and rules files are checked on load) or bounded when
evaluated; nothing reaches Python's `eval`.
"""

from __future__ import annotations

import pytest

from kloop.expr import ExpressionError, Missing
from kloop.profile import expr as playbook
from kloop.task import expr as task

HOSTILE = [
    "__import__('os').system('true')", "M.__class__", "(1).__class__.__bases__", "M[0]", "[M for M in (1,)]",
    "{M: 1}", "lambda: 1", "(M := 3)", "f'{M}'", "open('x')", "exec('1')", "getattr(M, 'real')",
    "min(M, key=M)", "M if M else __import__('os')", "*M",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expressions_are_refused_by_both_dialects(text: str) -> None:
    with pytest.raises(ExpressionError):
        task.evaluate(text, {"M": 3})
    with pytest.raises(ExpressionError):
        playbook.parse(text)


@pytest.mark.parametrize("text", ["9 ** 9 ** 9", "((9 ** 64) ** 64) ** 64", "(" * 600 + "1" + ")" * 600,
                                  "M" + " + M" * 1000, "'a' * 3"])
def test_task_arithmetic_bounds_what_it_evaluates(text: str) -> None:
    with pytest.raises(ExpressionError):
        task.evaluate(text, {"M": 3})


def test_playbook_strings_are_bounded_and_missing_names_do_not_fire() -> None:
    with pytest.raises(ExpressionError, match="will not evaluate something that long"):
        playbook.parse("'a' * 1000000000 == 'b'").evaluate({})
    rule = playbook.parse("dram_pct >= 60 and l2_hit < 50")
    assert rule.evaluate({"dram_pct": 70, "l2_hit": 10}) is True
    assert rule.evaluate({"dram_pct": 70}) is False  # l2_hit unmeasured: the rule does not hold
    with pytest.raises(Missing):
        playbook.parse("dram_pct / 2").evaluate({})
    assert playbook.parse("a / b").evaluate({"a": 1, "b": 0}) == float("inf")


def test_the_task_dialect_keeps_its_arithmetic() -> None:
    assert task.evaluate("2 * M * N * K", {"M": 2, "N": 3, "K": 4}) == 48
    assert task.evaluate("M % N == 0 and not M < 0", {"M": 6, "N": 3}) is True
    assert task.evaluate("ceil(log2(M)) if M > 1 else 0", {"M": 9}) == 4
    assert task.names_in("max(a, b) * c") == {"a", "b", "c"}
