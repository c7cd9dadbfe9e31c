"""`kloop report --format md`: the same facts as the HTML page, for terminals and pull requests.

Agent text is put in code spans with backticks and newlines removed, so it cannot break the
tables or inject markup.
"""

from __future__ import annotations

from typing import Any

from kloop.report.data import RunData, spent_rows, spent_text, workload_label
from kloop.verify.stats import INTERVAL_METHOD


def _safe(text: object, limit: int = 160) -> str:
    flat = " ".join(str(text).split()).replace("`", "'").replace("|", "/")
    return flat[:limit]


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _branches(branches: list[dict[str, Any]]) -> list[str]:
    """A team run's branches: how each ended, its head, its own best and its rebases."""
    if not branches:
        return []
    lines = ["", "## Branches", "", "| branch | status | head | own best | accepted | rebased onto | why it ended |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for b in branches:
        best = b.get("best") or {}
        moved = ", ".join(str(m.get("onto")) for m in b.get("rebases") or []) or "-"
        lines.append(f"| {b['name']} | {b.get('status', '-')} | {b.get('head') or '-'} | {best.get('candidate', 'none')} "
                     f"{_x(best.get('speedup_geomean')) if best else ''} | {b.get('accepted', 0)} of {b.get('rounds', 0)} | {moved} | "
                     f"{_safe(b.get('reason', ''), 200)} |")
    return lines


def render_markdown(data: RunData) -> str:
    s = data.summary
    best = s.get("best") or {}
    rounds = [r for r in data.rounds if r.round > 0]
    lines = [f"# kloop run: {_safe(s.get('task') or data.run_dir.name)}", "",
             f"- status: **{s.get('status', '-')}**, outcome: **{s.get('outcome', '-')}**",
             f"- best: **{best.get('candidate', '-')}** (round {best.get('round', '-')}) at "
             f"**{_x(best.get('speedup_geomean'))}**; {sum(r.accepted for r in rounds)} accepted of {len(rounds)} rounds",
             f"- reason: {_safe(s.get('reason', ''), 400)}"]
    if s.get("spent"):
        lines.append(f"- agents spent: {spent_text(s['spent'])} ("
                     + "; ".join(f"{label} {spent_text(part)}" for label, part in spent_rows(s["spent"])) + ")")
    lines += _branches(s.get("branches") or [])
    team = any(r.row.get("branch") for r in rounds)
    lines += ["", "## Rounds", "",
              f"| round |{' branch |' if team else ''} stage | candidate | parent | verify | speedup (CI) | review | gate |",
              f"| --- |{' --- |' if team else ''} --- | --- | --- | --- | --- | --- | --- |"]
    for r in rounds:
        ci = f" [{r.speedup_lo:.2f}, {r.speedup_hi:.2f}]" if r.speedup_lo is not None and r.speedup_hi is not None else ""
        gate = "accepted" if r.accepted else _safe("; ".join(r.reasons), 200)
        where = f" {r.row.get('branch') or '-'} |" if team else ""
        lines.append(f"| {r.round} |{where} {r.stage} | {r.candidate} | {r.parent or '-'} | {r.verify_status or '-'} | "
                     f"{_x(r.speedup_geomean)}{ci} | {r.review_decision or '-'} | {gate} |")
    lines += ["", "## Claims", ""]
    lines += [f"{r.round}. `{_safe(r.claim or '(no claim)')}`" for r in rounds]
    b = data.best
    workloads = [w for w in ((b.verify or {}).get("workloads") or [])] if b else []
    if workloads:
        lines += ["", f"## Per-workload results of {b.candidate}", "",
                  "| shape | status | latency ms | speedup (CI) |", "| --- | --- | --- | --- |"]
        for w in workloads:
            shape = ", ".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items()) or "-"
            ci = w.get("speedup_ci")
            cis = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            lat = w.get("latency_ms")
            shown = ("-" if lat is None else f"{lat:.4g}") + (" (harness-bound)" if w.get("harness_bound") else "")
            kind = f" ({workload_label(w)})" if w.get("heldout") else ""
            lines.append(f"| {shape}{kind} | {w.get('status', '-')} | {shown} | {_x(w.get('speedup'))}{cis} |")
    if data.route:
        lines += ["", "## Shape routing", "", _safe(data.route.get("reason", ""), 400)]
    lines += ["", f"Latency: the box's cost per call, the hand-off included; speedup = baseline latency / latency; "
              f"intervals: {INTERVAL_METHOD}."]
    return "\n".join(lines) + "\n"
