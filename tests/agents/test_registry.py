"""get_agent: specs validated, unknown kinds named, registrations checked when registered."""

from __future__ import annotations

import pytest

from kloop.agents import AgentUnavailable, UnknownAgentKind, get_agent, register_agent
from kloop.agents.rules import RulesReviewer
from kloop.agents.tuner import TunerAgent
from kloop.errors import BadInput


def test_builtin_kinds() -> None:
    assert isinstance(get_agent("rules"), RulesReviewer)
    assert isinstance(get_agent("tuner"), TunerAgent)


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(UnknownAgentKind) as info:
        get_agent("gpt-9", where="--writer")
    text = str(info.value)
    assert text.startswith("--writer: unknown agent kind 'gpt-9'") and "replay:ARG" in text and "rules" in text
    assert info.value.exit_code == 2


def test_argument_rules() -> None:
    with pytest.raises(BadInput, match="needs an argument"):
        get_agent("replay")
    with pytest.raises(BadInput, match="takes no argument"):
        get_agent("rules:strict")


def test_the_tuner_takes_an_optional_budget() -> None:
    assert get_agent("tuner").budget == TunerAgent().budget
    assert get_agent("tuner:32").budget == 32
    for bad in ("tuner:lots", "tuner:0"):
        with pytest.raises(BadInput, match="positive number of configurations"):
            get_agent(bad)


@pytest.mark.parametrize("name", ["claude", "codex", "kimi", "kimi-legacy"])
def test_a_cli_adapter_without_its_cli_is_a_named_error(name: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(f"KLOOP_{name.upper().replace('-', '_')}_BIN", str(tmp_path / "not-installed"))
    with pytest.raises(AgentUnavailable, match=f"the {name} CLI is not installed"):
        get_agent(name)


def test_registration_is_checked_at_registration() -> None:
    with pytest.raises(ValueError, match="lower-case"):
        register_agent("Bad Name", lambda arg: RulesReviewer())
    with pytest.raises(TypeError, match="not callable"):
        register_agent("notcallable", "nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="registered twice"):
        register_agent("rules", lambda arg: RulesReviewer())
