"""The human side of a run: `kloop approve` (the plan gate) and `kloop status`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.loop.branches import BranchPaths, branch_report, team_of
from kloop.loop.lineage import Lineage
from kloop.loop.state import RunPaths, read_round
from kloop.report.data import spent_rows, spent_text


def _open(run_dir: Path) -> tuple[RunPaths, Lineage]:
    paths = RunPaths(run_dir)
    if not paths.config.is_file() or not paths.lineage.is_file():
        raise BadInput(run_dir, "not a kloop run directory")
    return paths, Lineage(paths.lineage, plain=True)


def approve(run_dir: Path) -> str:
    """Record approval of notes/plan.md as it is now (a person may have edited it)."""
    paths, lineage = _open(run_dir)
    try:
        if lineage.get(0) is not None:
            raise BadInput(run_dir, "the plan is already frozen; nothing to approve")
        plan = paths.workspace / "notes" / "plan.md"
        if not lineage.meta("plan_written") or not plan.is_file():
            raise BadInput(run_dir, "research has not written notes/plan.md yet")
        digest = hashlib.sha256(plan.read_bytes()).hexdigest()
        lineage.set_meta("plan_approved", digest)
        return f"approved {plan} (sha256 {digest[:12]}); continue with: kloop run --resume {run_dir}"
    finally:
        lineage.close()


def show_status(run_dir: Path, as_json: bool = False, *, echo: Callable[[str], None]) -> None:
    """`kloop status`, typer-free so `kloop.cli_fast` runs it too; `echo` is typer.echo or its copy there.
    A stale report is rewritten first (a finished run's report is current: answering stays fast)."""
    text = status_report(run_dir, as_json)
    report: Path | None = run_dir / "report.html"
    if _report_stale(run_dir, report):
        from kloop.report.html import write_report

        try:
            report = write_report(run_dir)
        except OSError:
            report = None  # a read-only run directory still gets its status
    echo(text if as_json or report is None else f"{text}\nreport: {report}")


def _report_stale(run_dir: Path, report: Path | None) -> bool:
    """The report is missing or older than what it is made of (lineage, summary, round artifacts)."""
    if report is None or not report.exists():
        return True
    made = report.stat().st_mtime
    sources = [run_dir / "lineage.sqlite", run_dir / "summary.json", run_dir / "artifacts"]
    return any(p.exists() and p.stat().st_mtime > made for p in sources)


def status_report(run_dir: Path, as_json: bool) -> str:
    paths, lineage = _open(run_dir)
    try:
        in_flight = read_round(paths)
        best = lineage.best()
        rounds = lineage.rounds()
        data = {
            "status": lineage.meta("status", "running"),
            "stage": lineage.meta("stage"),
            "in_flight": in_flight,
            "best": {"candidate": best.candidate, "round": best.round, "speedup_geomean": best.speedup_geomean}
            if best else None,
            "elapsed_s": round(float(lineage.meta("elapsed_s", 0.0)), 1),
            "rounds": [{"round": r.round, "stage": r.stage, "candidate": r.candidate, "accepted": r.accepted,
                        "speedup_geomean": r.speedup_geomean, "reasons": r.reasons} for r in rounds],
        }
        team = team_of(lineage)
        data["spent"] = lineage.spending(team)
        if not team:
            del data["spent"]["branches"]  # a single run's spending keeps its shape
        else:  # a team run: every branch, and which branch each round was on
            data["branches"] = [_branch_status(run_dir, lineage, name) for name in team]
            for row, record in zip(data["rounds"], rounds, strict=True):
                row["branch"] = record.branch
    finally:
        lineage.close()
    if as_json:
        return json.dumps(data, indent=2)
    lines = [f"run {run_dir}: {data['status']} (stage {data['stage'] or '-'}, {data['elapsed_s']}s)"]
    if in_flight:
        lines.append(f"in flight: round {in_flight['round']} ({in_flight['stage']}), step {in_flight['step']}")
    if best:
        lines.append(f"best: {best.candidate} (round {best.round}) at {best.speedup_geomean or 1.0:.2f}x")
    spent = data["spent"]
    lines.append(f"spent: {spent_text(spent)} (" + "; ".join(f"{label} {spent_text(part)}"
                                                        for label, part in spent_rows(spent)) + ")")
    lines += [_branch_line(b) for b in data.get("branches", [])]
    for r in data["rounds"]:
        speed = f"{r['speedup_geomean']:.2f}x" if r["speedup_geomean"] else "-"
        verdict = "accepted" if r["accepted"] else "rejected: " + "; ".join(r["reasons"])[:90]
        where = f"{r['branch'] or '-':<3} " if "branch" in r else ""
        lines.append(f"  {r['round']:>3} {where}{r['stage']:<8} {r['candidate']} {speed:>7}  {verdict}")
    return "\n".join(lines)


def _branch_status(run_dir: Path, lineage: Lineage, branch: str) -> dict[str, Any]:
    """A branch as summary.json shows it, plus the round it has in flight."""
    report = branch_report(lineage, branch)
    report["in_flight"] = read_round(BranchPaths(run_dir, branch))
    return report


def _branch_line(b: dict[str, Any]) -> str:
    best = b["best"]
    own = f"{best['candidate']} at {best['speedup_geomean'] or 1.0:.2f}x" if best else "none accepted"
    flight = b["in_flight"]
    now = f"; in flight: round {flight['round']}, step {flight['step']}" if flight else ""
    moved = f"; rebased {len(b['rebases'])}x (last onto {b['rebases'][-1]['onto']})" if b["rebases"] else ""
    return (f"branch {b['name']}: {b['status']}, head {b['head']}, own best {own}, "
            f"{b['accepted']} accepted of {b['rounds']} rounds{moved}{now}")
