"""report.html: one self-contained page a person can read after a run (no scripts, no network).

Rounds table, the accepted lineage from the baseline to the best, speedups and every reason.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;width:100%;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .5em;
text-align:left;vertical-align:top;font-size:.9em}th{background:#f3f3f3}.ok{background:#eaf7ea}
.no{background:#fbeeee}.bar{background:#4a8;height:.8em;display:inline-block}code{font-size:.85em}
"""


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _bar(value: float | None, top: float) -> str:
    if not value or top <= 0:
        return ""
    width = max(2, int(160 * value / top))
    return f'<span class="bar" style="width:{width}px"></span>'


def _rounds_table(records: list[Any]) -> str:
    top = max([r.speedup_geomean or 0.0 for r in records] + [1.0])
    rows = []
    for r in records:
        css = "ok" if r.accepted else "no"
        reasons = "<br>".join(escape(x) for x in r.reasons) or "accepted"
        ci = f" [{r.speedup_lo:.2f}, {r.speedup_hi:.2f}]" if r.speedup_lo is not None and r.speedup_hi is not None else ""
        rows.append(
            f'<tr class="{css}"><td>{r.round}</td><td>{escape(r.stage)}</td><td>{escape(r.candidate)}</td>'
            f"<td>{escape(r.parent or '-')}</td><td>{escape(r.claim)[:200]}</td><td>{escape(r.verify_status or '-')}</td>"
            f"<td>{_fmt(r.speedup_geomean)}{escape(ci)} {_bar(r.speedup_geomean, top)}</td>"
            f"<td>{escape(r.review_decision or '-')}</td><td>{reasons}</td></tr>"
        )
    head = ("<tr><th>round</th><th>stage</th><th>candidate</th><th>parent</th><th>claim</th><th>verify</th>"
            "<th>speedup (CI)</th><th>review</th><th>gate</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _lineage_chain(records: list[Any], best: str) -> str:
    by_id = {r.candidate: r for r in records}
    chain: list[Any] = []
    node = by_id.get(best)
    while node is not None:
        chain.append(node)
        node = by_id.get(node.parent) if node.parent else None
    items = [f"<li><b>{escape(r.candidate)}</b> {_fmt(r.speedup_geomean)} - {escape(r.claim)[:160]}</li>"
             for r in reversed(chain)]
    return f"<ol>{''.join(items)}</ol>"


def _best_workloads(records: list[Any], best: str, axes: dict[str, dict[str, int]]) -> str:
    record = next((r for r in records if r.candidate == best), None)
    if record is None or not record.workload_speedups:
        return ""
    top = max([v for v in record.workload_speedups.values() if v] + [1.0])
    rows = "".join(
        f"<tr><td>{escape(_shape(axes.get(uuid)))}</td><td><code>{escape(uuid)}</code></td>"
        f"<td>{_fmt(v)} {_bar(v, top)}</td></tr>"
        for uuid, v in record.workload_speedups.items()
    )
    return (f"<h2>Per-workload speedups of {escape(best)}</h2>"
            f"<table><tr><th>shape</th><th>workload</th><th>speedup</th></tr>{rows}</table>")


def _shape(axes: dict[str, int] | None) -> str:
    return ", ".join(f"{name}={value}" for name, value in axes.items()) if axes else "-"


def workload_axes(verify_json: Path) -> dict[str, dict[str, int]]:
    """uuid -> var-axis values, from a round's verify.json (empty when it is missing or unreadable)."""
    import json

    try:
        data = json.loads(verify_json.read_text(encoding="utf-8"))
        return {w["uuid"]: dict(w.get("axes") or {}) for w in data.get("workloads", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def render_report(records: list[Any], summary: Any, axes: dict[str, dict[str, int]] | None = None) -> str:
    """The page as a string, from lineage records, the summary model and the best's workload shapes."""
    best = summary.best
    accepted = sum(1 for r in records if r.accepted and r.round > 0)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>kloop: {escape(summary.task)}</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>kloop run: {escape(summary.task)}</h1>"
        f"<p><b>status</b> {escape(str(summary.status.value))} &middot; <b>outcome</b> "
        f"{escape(str(summary.outcome.value))} &middot; <b>best</b> {escape(best.candidate)} "
        f"(round {best.round}) at <b>{_fmt(best.speedup_geomean)}</b> &middot; {accepted} accepted of "
        f"{len(summary.rounds)} rounds</p><p>{escape(summary.reason)}</p>"
        f"<h2>Accepted lineage</h2>{_lineage_chain(records, best.candidate)}"
        f"{_best_workloads(records, best.candidate, axes or {})}"
        f"<h2>Rounds</h2>{_rounds_table([r for r in records if r.round > 0])}"
        "<p><small>Speedups are geometric means over the task's workloads, measured by kloop's verifier "
        "against the sealed baseline; the interval is a bootstrap 95% CI.</small></p></body></html>\n"
    )


def write_report(run_dir: Path, lineage: Any, summary: Any) -> Path:
    path = run_dir / "report.html"
    tmp = path.with_name("report.html.tmp")
    axes = workload_axes(run_dir / "artifacts" / f"round-{summary.best.round:03d}" / "verify.json")
    tmp.write_text(render_report(lineage.all(), summary, axes), encoding="utf-8")
    tmp.replace(path)
    return path
