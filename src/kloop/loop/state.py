"""Where a run keeps things, and the write-ahead record of the round in flight.

`.kloop/round.json` is written (atomically) before each step of a round and removed when the
round is finished; if kloop dies in between, `--resume` finds it and either completes the
round's last bookkeeping (its lineage row exists) or repeats the round from its base commit.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

from kloop.errors import BadInput

CRASH_ENV = "KLOOP_TEST_CRASH_AT"


class RunPaths:
    """The run directory's layout (DESIGN.md)."""

    def __init__(self, run_dir: Path) -> None:
        self.root = run_dir
        self.sealed = run_dir / "sealed"
        self.workspace = run_dir / "workspace"
        self.lineage = run_dir / "lineage.sqlite"
        self.artifacts = run_dir / "artifacts"
        self.summary = run_dir / "summary.json"
        self.report = run_dir / "report.html"
        self.private = run_dir / ".kloop"
        self.config = self.private / "config.json"
        self.round_state = self.private / "round.json"
        self.git_pristine = self.private / "git-pristine"
        self.lock = self.private / "lock"

    def round_dir(self, number: int) -> Path:
        return self.artifacts / f"round-{number:03d}"


@dataclass
class RoundState:
    """The round in flight, saved before each step. A dataclass, validated by pydantic only where the loop
    reads it back (`load_round`): `kloop status` shows the file as it is without importing pydantic."""

    round: int
    stage: str
    parent: str  # the parent candidate's id
    base_commit: str  # the workspace commit the round starts from
    turn: int  # the writer's turn within the stage
    step: str = "prepare"  # the step about to run


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def save_round(paths: RunPaths, state: RoundState) -> None:
    atomic_write(paths.round_state, json.dumps(asdict(state)))


def read_round(paths: RunPaths) -> dict[str, Any] | None:
    """The round in flight as saved (None: none), for showing it; a file that is not one is bad input."""
    if not paths.round_state.is_file():
        return None
    try:
        saved = json.loads(paths.round_state.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(paths.round_state, f"not a saved round: {exc}") from None
    needed = [f.name for f in fields(RoundState) if f.default is MISSING]
    missing = [name for name in needed if name not in saved] if isinstance(saved, dict) else needed
    if missing:
        raise BadInput(paths.round_state, f"not a saved round: no {', '.join(missing)}")
    return {**{f.name: f.default for f in fields(RoundState) if f.default is not MISSING}, **saved}


def load_round(paths: RunPaths) -> RoundState | None:
    """The round in flight, validated: what `--resume` acts on."""
    from pydantic import TypeAdapter, ValidationError

    saved = read_round(paths)
    if saved is None:
        return None
    try:
        return TypeAdapter(RoundState).validate_python(saved)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BadInput(paths.round_state, f"not a saved round: {where}: {first['msg']}") from None


def clear_round(paths: RunPaths) -> None:
    paths.round_state.unlink(missing_ok=True)


def crash_point(step: str, round_number: int) -> None:
    """Fault injection for tests: `KLOOP_TEST_CRASH_AT=step` or `step:round` kills this process (kill -9)."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    name, _, at_round = wanted.partition(":")
    if name == step and (not at_round or int(at_round) == round_number):
        os.kill(os.getpid(), signal.SIGKILL)
