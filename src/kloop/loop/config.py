"""What a run was asked to do: validated once from the command line, saved in the run directory."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field, field_validator

from kloop.errors import BadInput


class Stage(StrEnum):
    research = "research"
    iterate = "iterate"
    tune = "tune"


STAGE_ORDER = [Stage.research, Stage.iterate, Stage.tune]


class RunConfig(BaseModel):
    """A run's settings; stored as `.kloop/config.json` so `--resume` needs nothing else."""

    task: str = Field(description="Task directory as given (the run works from its sealed copy).")
    writer: str = Field(description="Writer agent spec (replay:FILE, tuner, claude, ...).")
    reviewer: str = Field(description="Reviewer agent spec (rules, claude, ...).")
    stages: list[Stage] = Field(default_factory=lambda: [Stage.iterate, Stage.tune], description="Stages in order.")
    rounds: int | None = Field(default=20, ge=1, description="Most rounds (writer calls) over the whole run.")
    budget_s: float | None = Field(default=None, gt=0, description="Wall-time budget, seconds.")
    cost_limit_usd: float | None = Field(default=None, ge=0, description="Cost budget over all agent calls.")
    token_limit: int | None = Field(default=None, ge=0, description="Token budget over all agent calls (as the "
                                    "calls' gateways counted them).")
    target_speedup: float | None = Field(default=None, gt=0, description="Stop once the best reaches this.")
    device: str = Field(default="auto", description="auto, cpu, cuda, rocm or gpu (kloop.device.detect.REQUESTS).")
    gate_plan: bool = Field(default=False, description="Pause after research until `kloop approve`.")
    replan_after: int = Field(default=3, ge=1, description="Rounds without acceptance before a replan prompt.")
    stall_after: int = Field(default=3, ge=0, description="More rounds without acceptance before stopping: stalled.")
    full_review_every: int = Field(default=5, ge=1, description="Every Nth round the reviewer reviews in full.")
    agent_time_limit_s: float = Field(default=1800.0, gt=0, description="Wall-clock limit of one agent call.")
    tune_budget: int = Field(default=16, ge=1, description="Most configurations measured per tunable candidate.")
    sol_fraction: float = Field(default=0.9, gt=0, le=1, description="Stop when the best reaches this share of speed of light.")
    verify: dict[str, Any] = Field(default_factory=dict, description="Overrides of VerifyOptions (iterations, ...).")
    cluster: str = Field(default="local", description="Verification pool: local (in this process), auto or ray://ADDRESS.")
    team: int = Field(default=1, ge=1, description="Writers on their own branches (git worktrees); 1: a single run.")

    def writer_for(self, branch: str | None) -> str:
        """The writer spec of one team branch: `{branch}` in --writer names each branch's own (a replay file)."""
        return self.writer.replace("{branch}", branch) if branch else self.writer

    @field_validator("stages")
    @classmethod
    def _ordered(cls, stages: list[Stage]) -> list[Stage]:
        if not stages:
            raise ValueError("at least one stage is needed")
        if len(set(stages)) != len(stages):
            raise ValueError("a stage is listed twice")
        return sorted(stages, key=STAGE_ORDER.index)


def parse_stages(text: str) -> list[Stage]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    known = {s.value for s in Stage}
    for name in names:
        if name not in known:
            raise BadInput("--stages", f"unknown stage {name!r} (known: research, iterate, tune)")
    if not names:
        raise BadInput("--stages", "no stage given")
    return [Stage(n) for n in names]


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s)")
_TOKENS = re.compile(r"(\d+(?:\.\d+)?)\s*([kKmM]?)\s*(?:tokens?|tok)")


class Budgets(NamedTuple):
    """What `--budget` limits: wall time (s), dollars, tokens; None where it says nothing."""

    seconds: float | None
    cost: float | None
    tokens: int | None


def parse_budgets(text: str) -> Budgets:
    """`30m`, `1h30m`, `90s`, `120` (seconds), `$5` (cost), `200k tokens` (tokens, also `2Mtok`), or a
    comma-separated mix: `30m,$5,200k tokens`. The token part names its unit, so `m` means minutes
    only in a duration and millions only before `tokens`."""
    seconds: float | None = None
    cost: float | None = None
    tokens: int | None = None
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part.startswith("$"):
            try:
                cost = float(part[1:])
            except ValueError:
                raise BadInput("--budget", f"cost {part!r} is not a number of dollars") from None
            continue
        if re.search(r"tok(ens?)?$", part):
            found = _TOKENS.fullmatch(part)
            if found is None:
                raise BadInput("--budget", f"{part!r} is not a token count like 200000 tokens, 200k tokens or 2M tokens")
            scale = {"": 1, "k": 1_000, "m": 1_000_000}[found.group(2).lower()]
            tokens = int(float(found.group(1)) * scale)
            continue
        if re.fullmatch(r"\d+(\.\d+)?", part):
            seconds = float(part)
            continue
        if not re.fullmatch(r"(\d+(?:\.\d+)?\s*[hms]\s*)+", part):
            raise BadInput("--budget", f"{part!r} is not a duration like 30m, 1h30m, 90s, a cost like $5 "
                           "or a token count like 200k tokens")
        unit = {"h": 3600.0, "m": 60.0, "s": 1.0}
        seconds = sum(float(n) * unit[u] for n, u in _DURATION.findall(part))
    if seconds is not None and seconds <= 0:
        raise BadInput("--budget", "the duration must be positive")
    if tokens is not None and tokens <= 0:
        raise BadInput("--budget", "the token count must be positive")
    return Budgets(seconds, cost, tokens)


def parse_budget(text: str) -> tuple[float | None, float | None]:
    """(seconds, usd) of `--budget`: `parse_budgets` without the token part."""
    budgets = parse_budgets(text)
    return budgets.seconds, budgets.cost


def save_config(config: RunConfig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(config.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)


def load_config(path: Path) -> RunConfig:
    if not path.is_file():
        raise BadInput(path.parent.parent, "not a kloop run directory (no .kloop/config.json)")
    try:
        return RunConfig.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BadInput(path, f"unreadable run configuration: {str(exc).splitlines()[0]}") from None
