"""`replay:FILE`: a recorded campaign played back as the writer, one JSONL line per round.

Line format (DESIGN.md): `{"claim": str, "files": {relpath: content}, "delete": [relpath]}`,
paths relative to the workspace's `solution/`. kloop extensions, all optional:
`hypothesis`, `prediction` (speedup), `goal` (a non-speed goal), `symlinks` ({relpath: target}).

Writes are carried out exactly as written, escapes included (`../sealed/x`, `../.git/hooks/x`,
absolute paths, through a symlink), and a read-only file is made writable first, as a
determined agent would: refusing them is the gate's job, not the writer's. The line played is
the agent's `turn`, so a repeated round replays the same line; past the end it is exhausted.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kloop.agents.base import AgentRequest, AgentResult, AgentStatus, Claim
from kloop.errors import BadInput


class CampaignStep(BaseModel):
    """One round of a replay campaign."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(description="What the writer says it did.")
    files: dict[str, str] = Field(default_factory=dict, description="relpath (from solution/) -> new content.")
    delete: list[str] = Field(default_factory=list, description="relpaths to remove.")
    symlinks: dict[str, str] = Field(default_factory=dict, description="relpath -> link target (kloop extension).")
    hypothesis: str = Field(default="", description="The mechanism bet on (kloop extension).")
    prediction: float | None = Field(default=None, description="Predicted speedup (kloop extension).")
    goal: str | None = Field(default=None, description="Declared non-speed goal (kloop extension).")


def load_campaign(path: Path) -> list[CampaignStep]:
    """Parse and validate a campaign file; a bad line is named by file and line number."""
    if not path.is_file():
        raise BadInput(path, "replay campaign not found")
    steps: list[CampaignStep] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            steps.append(CampaignStep.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{number}", f"not JSON: {exc.msg}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise BadInput(f"{path}:{number}", f"{where}: {first['msg']}") from None
    return steps


def _force_write(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not os.access(target, os.W_OK):
        target.chmod(target.stat().st_mode | stat.S_IWUSR)
    target.write_text(content, encoding="utf-8")


def _remove(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


class ReplayAgent:
    """Plays campaign line `request.turn` into `workspace/solution/`."""

    def __init__(self, steps: list[CampaignStep], source: Path | None = None) -> None:
        self.steps = steps
        self.source = source

    @classmethod
    def from_file(cls, path: str) -> ReplayAgent:
        return cls(load_campaign(Path(path)), Path(path))

    def run(self, request: AgentRequest) -> AgentResult:
        if request.turn >= len(self.steps):
            return AgentResult(status=AgentStatus.exhausted, final_message="no change: campaign exhausted")
        step = self.steps[request.turn]
        solution = request.workspace / "solution"
        for rel in step.delete:
            _remove(solution / rel)
        for rel, target in step.symlinks.items():
            link = solution / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            _remove(link)
            link.symlink_to(target)
        for rel, content in step.files.items():
            _force_write(solution / rel, content)
        transcript = None
        if request.artifacts_dir is not None:
            transcript = request.artifacts_dir / "transcript.md"
            transcript.write_text(
                f"# replay turn {request.turn}\n\n{step.claim}\n\n```json\n"
                f"{step.model_dump_json(indent=1)}\n```\n",
                encoding="utf-8",
            )
        claim = Claim(text=step.claim, hypothesis=step.hypothesis, prediction=step.prediction, goal=step.goal)
        return AgentResult(
            status=AgentStatus.completed, final_message=step.claim, claim=claim, transcript_path=transcript
        )
