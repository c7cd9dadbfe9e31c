"""Agents: one protocol, one adapter per agent kind, and the built-in offline agents."""

from __future__ import annotations

from kloop.agents.base import (
    Agent,
    AgentRequest,
    AgentResult,
    AgentStatus,
    Claim,
    Decision,
    ProgressMark,
    ReviewEvidence,
    ReviewFinding,
    Role,
    Severity,
    Verdict,
    parse_verdict,
)
from kloop.agents.registry import AgentUnavailable, UnknownAgentKind, get_agent, register_agent

__all__ = [
    "Agent",
    "AgentRequest",
    "AgentResult",
    "AgentStatus",
    "AgentUnavailable",
    "Claim",
    "Decision",
    "ProgressMark",
    "ReviewEvidence",
    "ReviewFinding",
    "Role",
    "Severity",
    "UnknownAgentKind",
    "Verdict",
    "get_agent",
    "parse_verdict",
    "register_agent",
]
