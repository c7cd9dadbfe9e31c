"""Agent kinds by name: `get_agent("replay:FILE")`, `get_agent("rules")`, ...

Kinds are registered with a factory and checked when registered (a bad name or a factory
that is not callable fails at import time, not in the middle of a run). A spec is
`KIND` or `KIND:ARG`; an unknown kind is a named error listing the known ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kloop.agents.base import Agent
from kloop.errors import BadInput

_KIND = re.compile(r"^[a-z][a-z0-9_-]*$")


class UnknownAgentKind(BadInput):
    """An agent spec names a kind nobody registered."""


class AgentUnavailable(BadInput):
    """A known agent kind that cannot run here (its CLI or endpoint is not present)."""


@dataclass(frozen=True)
class AgentKind:
    name: str
    factory: Callable[[str | None], Agent]
    needs_arg: bool
    help: str
    optional_arg: bool = False
    """Takes `KIND` or `KIND:ARG` (e.g. `tuner:32`, a tuning budget)."""


_KINDS: dict[str, AgentKind] = {}


def register_agent(
    name: str, factory: Callable[[str | None], Agent], *, needs_arg: bool = False, help: str = "",
    optional_arg: bool = False,
) -> None:
    """Add a kind; validated now so that a broken registration never reaches a run."""
    if not _KIND.match(name):
        raise ValueError(f"agent kind {name!r}: lower-case letters, digits, '-' and '_' only")
    if not callable(factory):
        raise TypeError(f"agent kind {name!r}: factory is not callable")
    if name in _KINDS:
        raise ValueError(f"agent kind {name!r} is registered twice")
    _KINDS[name] = AgentKind(name, factory, needs_arg, help, optional_arg)


def agent_kinds() -> list[AgentKind]:
    return sorted(_KINDS.values(), key=lambda k: k.name)


def parse_spec(spec: str) -> tuple[str, str | None]:
    kind, sep, arg = spec.partition(":")
    return kind.strip(), (arg if sep else None)


def get_agent(spec: str, *, where: str = "agent") -> Agent:
    """Build the agent a spec names; every problem is a one-line BadInput naming the spec."""
    kind_name, arg = parse_spec(spec)
    kind = _KINDS.get(kind_name)
    if kind is None:
        known = ", ".join(k.name + (":ARG" if k.needs_arg else "[:ARG]" if k.optional_arg else "")
                          for k in agent_kinds())
        raise UnknownAgentKind(where, f"unknown agent kind {kind_name!r} in {spec!r} (known: {known})")
    if kind.needs_arg and not arg:
        raise BadInput(where, f"agent kind {kind_name!r} needs an argument: {kind_name}:ARG")
    if not kind.needs_arg and not kind.optional_arg and arg:
        raise BadInput(where, f"agent kind {kind_name!r} takes no argument (got {spec!r})")
    return kind.factory(arg)


def _unavailable(name: str) -> Callable[[str | None], Agent]:
    def factory(arg: str | None) -> Agent:
        raise AgentUnavailable(
            name, "this CLI adapter is planned (docs/agents.md) but not part of this build; "
            "use replay:FILE, tuner or rules"
        )

    return factory


def _cli(cls: Callable[[], Any]) -> Callable[[str | None], Agent]:
    """A CLI adapter's factory: a CLI that is not installed is a named error before the run starts."""

    def factory(arg: str | None) -> Agent:
        agent = cls()
        if agent.program_argv() is None:
            raise AgentUnavailable(agent.name, f"the {agent.name} CLI is not installed here (scripts/agent-clis.sh "
                                   f"installs the pinned version; or set KLOOP_{agent.name.upper().replace('-', '_')}_BIN)")
        return agent

    return factory


def _tuner(arg: str | None) -> Agent:
    from kloop.agents.tuner import TunerAgent

    if arg is None:
        return TunerAgent()
    if not arg.isdigit() or int(arg) < 1:
        raise BadInput("tuner", f"tuner:N takes a positive number of configurations, got {arg!r}")
    return TunerAgent(budget=int(arg))


def _register_builtins() -> None:
    from kloop.agents.replay import ReplayAgent
    from kloop.agents.rules import RulesReviewer

    register_agent("replay", lambda arg: ReplayAgent.from_file(arg or ""), needs_arg=True,
                   help="replays a recorded campaign (JSONL, one line per round)")
    register_agent("tuner", _tuner, optional_arg=True,
                   help="searches the tunables a solution declares (tuner:N measures at most N configurations)")
    register_agent("rules", lambda arg: RulesReviewer(), help="deterministic reviewer")
    from kloop.agents.claude import ClaudeAgent
    from kloop.agents.codex import CodexAgent
    from kloop.agents.kimi import KimiAgent
    from kloop.agents.kimi_legacy import LegacyKimiAgent

    register_agent("claude", _cli(ClaudeAgent), help="Claude Code headless (claude -p, stream-json)")
    register_agent("codex", _cli(CodexAgent), help="Codex CLI (codex exec --json)")
    register_agent("kimi", _cli(KimiAgent), help="Kimi Code CLI (kimi -p, stream-json)")
    register_agent("kimi-legacy", _cli(LegacyKimiAgent), help="legacy PyPI kimi-cli 1.50 (kimi --print)")
    def openai_factory(arg: str | None) -> Agent:
        from kloop.agents.openai_agent import OpenAIAgent  # the SDK loads only when this kind is used

        return OpenAIAgent(arg or "")

    register_agent("openai", openai_factory, needs_arg=True,
                   help="kloop's tool-calling agent over an OpenAI-compatible endpoint (OPENAI_BASE_URL)")


_register_builtins()
