"""Shared pieces of the loop tests: the tiny task, campaign files, a run built in-process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from kloop.agents.registry import get_agent
from kloop.agents.tuner import TunerAgent
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from kloop.loop.verifier import FakeVerifier, KloopVerifier, Verifier

TASKS = Path(__file__).parent / "tasks"
ROWSCALE = TASKS / "rowscale"

VECTORIZED = "import torch\n\n\ndef run(x, w):\n    return x * w\n"
# Fast enough on the real verifier for the tests: few iterations, one held-out workload.
FAST_VERIFY: dict[str, Any] = {"iterations": 2, "rounds": 6, "warmup": 1, "heldout": 1, "recheck": 1, "timeout_s": 60,
                               "workloads": 1}


def write_campaign(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def fake(speedup: float, **extra: Any) -> str:
    return json.dumps({"speedup": speedup, **extra})


def make_campaign(tmp: Path, lines: list[dict[str, Any]], *, verifier: Verifier | None = None,
                  task: Path = ROWSCALE, stages: list[Stage] | None = None, **config: Any) -> Campaign:
    tmp.mkdir(parents=True, exist_ok=True)
    campaign_path = write_campaign(tmp / "campaign.jsonl", lines)
    cfg = RunConfig(task=str(task), writer=f"replay:{campaign_path}", reviewer="rules",
                    stages=stages or [Stage.iterate], device="cpu", **config)
    services = Services(writer=get_agent(cfg.writer), reviewer=get_agent("rules"), tuner=TunerAgent(),
                        verifier=verifier or FakeVerifier())
    return Campaign.create(task, tmp / "run", cfg, services)


def real_verifier() -> KloopVerifier:
    return KloopVerifier("cpu", FAST_VERIFY)


def lineage_rows(run: Path, columns: str) -> list[dict[str, Any]]:
    """`columns` of every candidate row of a run's lineage (the seed row excluded), in round order."""
    db = sqlite3.connect(run / "lineage.sqlite")
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute(f"SELECT {columns} FROM candidates WHERE round > 0 ORDER BY round")]
    finally:
        db.close()
