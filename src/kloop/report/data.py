"""Everything a report shows, read from a run directory's files (never from the loop's objects).

lineage.sqlite is opened read-only; each round's claim, verify, review and profile digest come
from `artifacts/round-NNN/`. Anything missing or unreadable is simply absent: a report of a run
that crashed half-way still renders.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FINDING_ID = re.compile(r"\b(memory_bound|compute_bound|latency_bound|near_speed_of_light|tensor_core_bound|"
                        r"grid_too_small|tail_effect|occupancy_limited_\w+|register_spill|uncoalesced_global_access|"
                        r"shared_memory_bank_conflict|warp_divergence|atomic_contention|tensor_cores_unused|"
                        r"poor_data_reuse|redundant_dram_traffic|long_scoreboard_stall|barrier_stall|pipe_throttle|"
                        r"instruction_cache_miss|low_issue_efficiency|launch_overhead|workload_imbalance)\b")
_JSON = ("config", "changed_paths", "verify_summary", "workload_speedups", "findings", "reasons")


@dataclass
class Round:
    """One lineage row plus its artifacts."""

    row: dict[str, Any]
    verify: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    digest: str | None = None

    def __getattr__(self, name: str) -> Any:
        try:
            return self.row[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def findings_ids(self) -> list[str]:
        return sorted(set(FINDING_ID.findall(self.digest or "")))


@dataclass
class RunData:
    run_dir: Path
    summary: dict[str, Any]
    rounds: list[Round]
    meta: dict[str, Any] = field(default_factory=dict)
    route: dict[str, Any] | None = None

    def by_candidate(self, candidate: str) -> Round | None:
        return next((r for r in self.rounds if r.candidate == candidate), None)

    @property
    def best(self) -> Round | None:
        best = (self.summary.get("best") or {}).get("candidate")
        return self.by_candidate(best) if best else None


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _rows(db: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if not db.is_file():
        return [], {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in conn.execute("SELECT * FROM candidates ORDER BY round")]
        meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    except sqlite3.Error:
        return [], {}
    finally:
        conn.close()
    for row in rows:
        for key in _JSON:
            if isinstance(row.get(key), str):
                row[key] = json.loads(row[key])
        row["accepted"] = bool(row.get("accepted"))
        row["reasons"] = row.get("reasons") or []
        row["findings"] = row.get("findings") or []
    return rows, meta


def load_run(run_dir: Path, summary: dict[str, Any] | None = None) -> RunData:
    """The run as the report sees it."""
    rows, meta = _rows(run_dir / "lineage.sqlite")
    rounds = []
    for row in rows:
        art = run_dir / "artifacts" / ("research" if row["round"] == 0 else f"round-{row['round']:03d}")
        digest = art / "profile-digest.md"
        rounds.append(Round(row=row, verify=_json(art / "verify.json"), review=_json(art / "review.json"),
                            digest=digest.read_text(encoding="utf-8") if digest.is_file() else None))
    summary = summary or _json(run_dir / "summary.json") or {}
    return RunData(run_dir=run_dir, summary=summary, rounds=rounds, meta=meta,
                   route=_json(run_dir / "routed" / "route.json"))


def spent_text(part: dict[str, Any] | None) -> str:
    """`$0.0016, 300 tokens`: a `spent` entry of summary.json (4 decimals: a scripted or local call
    costs fractions of a cent)."""
    part = part or {}
    return f"${float(part.get('usd') or 0.0):.4f}, {int(part.get('tokens') or 0):,} tokens"


def spent_rows(spent: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, part) rows of summary.json's `spent`: writer, reviewer, research, then each branch's."""
    rows = [(name, spent.get(name) or {}) for name in ("writer", "reviewer", "research")]
    rows += [(f"branch {name}", part) for name, part in sorted((spent.get("branches") or {}).items())]
    return rows


def shapes_of(data: RunData) -> dict[str, dict[str, int]]:
    """uuid -> var axes of the listed workloads, from any round's verify.json."""
    out: dict[str, dict[str, int]] = {}
    for r in data.rounds:
        for w in (r.verify or {}).get("workloads", []):
            if not w.get("heldout"):
                out.setdefault(w["uuid"], dict(w.get("axes") or {}))
    return out


def workload_label(w: dict[str, Any]) -> str:
    """What a row is: a listed workload (its uuid), a held-out shape, or a coverage regime by name."""
    uuid = str(w.get("uuid", ""))
    if uuid.startswith("heldout-coverage-"):
        regime = uuid.removeprefix("heldout-coverage-").split("-", 1)[0]
        return f"coverage regime '{regime}' (untimed)"
    if w.get("heldout"):
        return "held-out shape (untimed)"
    return uuid[:18]
