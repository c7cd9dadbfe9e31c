"""How a run ends: one family of stop exceptions, each carrying its status and reason.

The orchestrator raises them from wherever the condition is seen; `Campaign.run` catches
the family in one place, writes the reason into summary.json and picks the outcome.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """How the run stopped (summary.json `status`)."""

    running = "running"
    awaiting_approval = "awaiting_approval"
    completed = "completed"
    target_reached = "target_reached"
    budget = "budget"
    stalled = "stalled"
    speed_of_light = "speed_of_light"
    interrupted = "interrupted"
    blocked = "blocked"


class Outcome(StrEnum):
    """What the run established (summary.json `outcome`)."""

    improvement = "improvement"
    no_go = "no-go"
    blocked = "blocked"


class StopRun(Exception):
    """Base of every way a run ends; `status` goes to summary.json, `reason` with it."""

    status = RunStatus.completed

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Completed(StopRun):
    status = RunStatus.completed


class TargetReached(StopRun):
    status = RunStatus.target_reached


class BudgetExhausted(StopRun):
    status = RunStatus.budget


class Stalled(StopRun):
    status = RunStatus.stalled


class SpeedOfLight(StopRun):
    status = RunStatus.speed_of_light


class Interrupted(StopRun):
    status = RunStatus.interrupted


class Blocked(StopRun):
    """Something outside the loop is missing: hardware, a dependency, a working baseline."""

    status = RunStatus.blocked


class AwaitingApproval(StopRun):
    status = RunStatus.awaiting_approval


def stagnation(rounds_since_accept: int, replan_after: int, stall_after: int) -> str | None:
    """`replan` once N rounds passed without acceptance, `stalled` after M more, else None."""
    if rounds_since_accept >= replan_after + stall_after:
        return "stalled"
    if rounds_since_accept >= replan_after:
        return "replan"
    return None
