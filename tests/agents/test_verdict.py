"""The reviewer verdict contract and its parsing from a CLI reviewer's answer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kloop.agents import Decision, ProgressMark, Severity, Verdict, parse_verdict


def test_parse_the_last_valid_verdict_from_prose() -> None:
    text = (
        'I looked at {"not": "a verdict"} first.\n```json\n{"decision": "accept", "progress": "advanced", '
        '"findings": [], "summary": "draft"}\n```\nOn reflection:\n'
        '{"decision": "reject", "progress": "regressed", "findings": [{"severity": "high", "text": "caches"}], '
        '"summary": "caches outputs"}'
    )
    verdict = parse_verdict(text)
    assert verdict is not None and verdict.decision is Decision.reject
    assert verdict.progress is ProgressMark.regressed and verdict.findings[0].severity is Severity.high


def test_no_or_invalid_verdict() -> None:
    assert parse_verdict("looks fine to me") is None
    assert parse_verdict('{"decision": "maybe", "progress": "advanced"}') is None


def test_outcomes_are_closed() -> None:
    with pytest.raises(ValidationError):
        Verdict.model_validate({"decision": "accept", "progress": "sideways"})
    with pytest.raises(ValidationError):
        Verdict.model_validate({"decision": "accept", "progress": "stalled",
                                "findings": [{"severity": "critical", "text": "x"}]})
