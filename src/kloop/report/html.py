"""report.html: one self-contained page a person can read after a run (inline CSS and SVG, no scripts).

Run summary; speedup over rounds and over time, overall and per regime, as charts; the lineage
tree with every candidate and why it was accepted or rejected; per round the evidence (checks,
profile findings before and after, the reviewer's verdict, the claim); the best's per-workload
table with confidence intervals and speed-of-light fractions where known; the route, when one
was built. Every piece of agent or task text is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from kloop.report.data import Round, RunData, load_run, spent_rows, spent_text, workload_label
from kloop.report.series import regime_series, round_series, sol_fractions, time_series
from kloop.verify.stats import INTERVAL_METHOD

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
main{max-width:72em;margin:0 auto;padding:1.2em 1.5em 3em}h1{font-size:1.5em;margin:.2em 0}
h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #d8dde5;padding-bottom:.2em}
section{background:#fff;border:1px solid #e1e5eb;border-radius:6px;padding:.6em 1em;margin:.8em 0}
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}.card{background:#fff;border:1px solid #e1e5eb;
border-radius:6px;padding:.4em .8em;min-width:8em}.card b{display:block;font-size:1.25em}.card span{color:#5b6573;font-size:.8em}
table{border-collapse:collapse;width:100%;margin:.5em 0}td,th{border-bottom:1px solid #e6e9ee;padding:.3em .5em;
text-align:left;vertical-align:top;font-size:.88em}th{background:#f0f2f5}tr.ok td:first-child{border-left:4px solid #2e9e5b}
tr.no td:first-child{border-left:4px solid #d9534f}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(30em,1fr));gap:.8em}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #e1e5eb;border-radius:6px}
svg text{font-size:11px;fill:#4a5361}.axis{stroke:#8a93a0}.grid{stroke:#eef0f3}
ul.tree,ul.tree ul{list-style:none;padding-left:1.2em;margin:0}ul.tree li{margin:.15em 0;position:relative}
ul.tree li::before{content:'';position:absolute;left:-.9em;top:.65em;width:.6em;border-top:1px solid #b9c0ca}
.tag{display:inline-block;border-radius:3px;padding:0 .35em;font-size:.78em;margin-right:.3em}
.acc{background:#e3f4e9;color:#1e6b3d}.rej{background:#fbe5e4;color:#8e2a26}.muted{color:#6b7480}
details{border-top:1px solid #eef0f3;padding:.3em 0}summary{cursor:pointer}pre{white-space:pre-wrap;
background:#f6f7f9;border:1px solid #e6e9ee;padding:.5em;font-size:.8em;max-height:22em;overflow:auto}
.bar{background:#2a6fdb;height:.7em;display:inline-block;vertical-align:middle;margin-left:.4em;border-radius:2px}
code{font-size:.85em}
"""


def _x(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}x"


def _ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and len(ci) == 2 else ""


def _tag(ok: bool) -> str:
    return '<span class="tag acc">accepted</span>' if ok else '<span class="tag rej">rejected</span>'


def _cards(data: RunData) -> str:
    s = data.summary
    best = s.get("best") or {}
    rounds = [r for r in data.rounds if r.round > 0]
    cards = [("status", s.get("status", data.meta.get("status", "running"))), ("outcome", s.get("outcome", "-")),
             ("best", f"{best.get('candidate', '-')} · {_x(best.get('speedup_geomean'))}"),
             ("rounds", f"{sum(r.accepted for r in rounds)} accepted of {len(rounds)}"),
             ("elapsed", f"{float(data.meta.get('elapsed_s', 0.0)):.0f} s")]
    if s.get("spent") is not None:
        cards.append(("agents spent", spent_text(s["spent"]).replace(", ", " · ")))
    if data.meta.get("best_sol_fraction") is not None:
        cards.append(("speed of light", f"{data.meta['best_sol_fraction']:.0%}"))
    body = "".join(f'<div class="card"><span>{escape(k)}</span><b>{escape(str(v))}</b></div>' for k, v in cards)
    return f'<div class="cards" id="summary">{body}</div><p>{escape(str(s.get("reason", "")))}</p>'


def _charts(data: RunData) -> str:
    return ('<h2>Speedup</h2><div class="charts">' + round_series(data) + time_series(data) + regime_series(data)
            + "</div><p class='muted'>Lines: best accepted so far. Dots: each measured round "
            "(filled = accepted, hollow = rejected).</p>")


def _tree(data: RunData) -> str:
    children: dict[str | None, list[Round]] = {}
    for r in data.rounds:
        children.setdefault(r.parent, []).append(r)

    def node(r: Round) -> str:
        why = "" if r.accepted else f' <span class="muted">{escape("; ".join(r.reasons)[:240])}</span>'
        kids = "".join(node(c) for c in children.get(r.candidate, []))
        return (f'<li id="node-{escape(r.candidate)}">{_tag(r.accepted)}<b>{escape(r.candidate)}</b> '
                f'<span class="muted">round {r.round}, {escape(r.stage)}</span> {_x(r.speedup_geomean)}'
                f" {escape(_ci([r.speedup_lo, r.speedup_hi]) if r.speedup_lo is not None else '')}{why}"
                f"{'<ul>' + kids + '</ul>' if kids else ''}</li>")

    roots = children.get(None, [])
    return f'<h2>Lineage</h2><section><ul class="tree" id="lineage">{"".join(node(r) for r in roots)}</ul></section>'


def _branches(data: RunData) -> str:
    """A team run (`--team N`): one row per branch: how it ended, its head, its own best, its rebases."""
    branches = data.summary.get("branches") or []
    if not branches:
        return ""
    rows = []
    for b in branches:
        best = b.get("best") or {}
        moved = ", ".join(f"after round {m['after_round']} onto {m['onto']}" for m in b.get("rebases") or [])
        rows.append(f"<tr><td>{escape(b['name'])}</td><td>{escape(str(b.get('status', '-')))}</td>"
                    f"<td>{escape(str(b.get('head') or '-'))}</td><td>{escape(str(best.get('candidate', 'none')))} "
                    f"{_x(best.get('speedup_geomean')) if best else ''}</td><td>{b.get('accepted', 0)} of {b.get('rounds', 0)}</td>"
                    f"<td>{escape(moved or '-')}</td><td>{escape(str(b.get('reason', '')))}</td></tr>")
    head = ("<tr><th>branch</th><th>status</th><th>head</th><th>own best</th><th>accepted</th>"
            "<th>rebased</th><th>why it ended</th></tr>")
    return f'<h2>Branches</h2><section><table id="branches">{head}{"".join(rows)}</table></section>'


def _spent(data: RunData) -> str:
    """What the agents spent (summary.json `spent`): the writer's, reviewer's and researcher's calls, and
    each branch's rounds in a team run; the run's cost and token budgets are held to the total."""
    spent = data.summary.get("spent")
    if not spent:
        return ""
    rows = "".join(f"<tr><td>{escape(label)}</td><td>${float(part.get('usd') or 0.0):.4f}</td>"
                   f"<td>{int(part.get('tokens') or 0):,}</td></tr>" for label, part in spent_rows(spent))
    return (f'<h2>Agent spending</h2><section><table id="spent"><tr><th>calls</th><th>dollars</th><th>tokens</th></tr>'
            f"{rows}<tr><th>total</th><th>${float(spent.get('usd') or 0.0):.4f}</th>"
            f"<th>{int(spent.get('tokens') or 0):,}</th></tr></table></section>")


def _rounds_table(data: RunData) -> str:
    rows = []
    team = any(r.row.get("branch") for r in data.rounds)
    for r in (x for x in data.rounds if x.round > 0):
        reasons = "<br>".join(escape(x) for x in r.reasons) or "accepted"
        where = f"<td>{escape(r.row.get('branch') or '-')}</td>" if team else ""
        rows.append(f'<tr class="{"ok" if r.accepted else "no"}"><td>{r.round}</td>{where}<td>{escape(r.stage)}</td>'
                    f"<td>{escape(r.candidate)}</td><td>{escape(r.parent or '-')}</td>"
                    f"<td>{escape(r.verify_status or '-')}</td><td>{_x(r.speedup_geomean)} "
                    f"{_ci([r.speedup_lo, r.speedup_hi]) if r.speedup_lo is not None else ''}</td>"
                    f"<td>{escape(r.review_decision or '-')}</td><td>{reasons}</td></tr>")
    head = (f"<tr><th>round</th>{'<th>branch</th>' if team else ''}<th>stage</th><th>candidate</th><th>parent</th><th>verify</th>"
            "<th>speedup (95% CI)</th><th>review</th><th>gate</th></tr>")
    return f'<h2>Rounds</h2><section><table id="rounds">{head}{"".join(rows)}</table></section>'


def _checks(r: Round) -> str:
    checks = (r.verify or {}).get("checks") or []
    if not checks:
        return "<p class='muted'>No verifier checks recorded.</p>"
    failed = [c for c in checks if not c.get("passed")]
    items = "".join(f"<li><b>{escape(c['name'])}</b>: {escape(str(c.get('detail', '')))[:300]}</li>" for c in failed)
    return (f"<p>Checks: {len(checks) - len(failed)} of {len(checks)} passed"
            f"{'; failed:' if failed else '.'}</p>{'<ul>' + items + '</ul>' if items else ''}")


def _findings(data: RunData, r: Round) -> str:
    parent = data.by_candidate(r.parent) if r.parent else None
    before = parent.findings_ids if parent else []
    after = r.findings_ids
    if not before and not after:
        return "<p class='muted'>No profile for this round.</p>"
    resolved = [f for f in before if f not in after]
    new = [f for f in after if f not in before]
    text = (f"<p>Profile findings before ({escape(r.parent or '-')}): <code>{escape(', '.join(before) or 'none')}</code>"
            f" &rarr; after: <code>{escape(', '.join(after) or 'not profiled')}</code>"
            f"{'; resolved: ' + escape(', '.join(resolved)) if resolved and after else ''}"
            f"{'; new: ' + escape(', '.join(new)) if new else ''}</p>")
    return text + (f"<details><summary>profile digest</summary><pre>{escape(r.digest)}</pre></details>" if r.digest else "")


def _review(r: Round) -> str:
    review = r.review or {}
    verdict = review.get("verdict") if isinstance(review.get("verdict"), dict) else review
    if not verdict or not verdict.get("decision"):
        return f"<p class='muted'>Reviewer: {escape(r.review_decision or 'not reviewed')}.</p>"
    items = "".join(f"<li>{escape(str(f.get('severity', '')))}: {escape(str(f.get('text', '')))}</li>"
                    for f in verdict.get("findings") or [] if isinstance(f, dict))
    return (f"<p>Reviewer: <b>{escape(str(verdict.get('decision')))}</b> ({escape(str(verdict.get('progress', '-')))})"
            f" &mdash; {escape(str(verdict.get('summary', '')))}</p>{'<ul>' + items + '</ul>' if items else ''}")


def _evidence(data: RunData) -> str:
    parts = []
    for r in (x for x in data.rounds if x.round > 0):
        claim = escape(r.claim or "(no claim)")
        hyp = f"<p>Hypothesis: {escape(r.hypothesis)}</p>" if r.hypothesis else ""
        gate = "accepted" if r.accepted else "; ".join(r.reasons)
        is_best = data.best is not None and r.candidate == data.best.candidate
        parts.append(f'<details class="round" id="round-{r.round}"{" open" if is_best else ""}><summary>{_tag(r.accepted)}round {r.round} '
                     f"&middot; {escape(r.candidate)} &middot; {_x(r.speedup_geomean)}</summary>"
                     f"<p>Claim (writer's words, untrusted):</p><pre>{claim}</pre>{hyp}{_checks(r)}"
                     f"{_findings(data, r)}{_review(r)}<p>Gate: {escape(gate)}</p></details>")
    return f'<h2>Evidence per round</h2><section id="evidence">{"".join(parts) or "No rounds yet."}</section>'


def _shape(axes: dict[str, int] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items()) if axes else "-"


def _workloads(data: RunData) -> str:
    best = data.best
    rows = [w for w in ((best.verify or {}).get("workloads") or [])] if best else []
    if not rows:
        return ""
    sol = sol_fractions(data, best)
    top = max([w.get("speedup") or 0.0 for w in rows] + [1.0])
    body = []
    for w in rows:
        s = w.get("speedup")
        bar = f'<span class="bar" style="width:{max(2, int(120 * s / top))}px"></span>' if s else ""
        frac = sol.get(w["uuid"])
        bound = " (harness-bound)" if w.get("harness_bound") else ""  # flagged, still measured: the hand-off is in both costs
        latency = f"{_ms(w.get('latency_ms'))} {_ci_ms(w.get('latency_ci_ms'))}{bound}"
        body.append(f"<tr><td>{escape(_shape(w.get('axes')))}</td><td>{escape(workload_label(w))}</td>"
                    f"<td>{escape(w.get('status', '-'))}</td><td>{escape(latency)}</td>"
                    f"<td>{_ms(w.get('baseline_latency_ms'))}</td><td>{_x(s)} {_ci(w.get('speedup_ci'))}{bar}</td>"
                    f"<td>{'-' if frac is None else f'{frac:.1%}'}</td></tr>")
    head = ("<tr><th>shape</th><th>workload</th><th>status</th><th>latency ms (95% CI)</th><th>baseline ms</th>"
            "<th>speedup (95% CI)</th><th>speed of light</th></tr>")
    return (f"<h2>Per-workload results of {escape(best.candidate)}</h2><section><table id='workloads'>{head}"
            f"{''.join(body)}</table></section>")


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _ci_ms(ci: list[float] | None) -> str:
    return f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci and len(ci) == 2 else ""


def _route(data: RunData) -> str:
    route = data.route
    if not route:
        return ""
    plan = route.get("plan") or {}
    rows = "".join(f"<tr><td>{escape(r['regime']['axis'])} in [{r['regime']['lo']}, "
                   f"{'inf' if r['regime']['hi'] >= 2**62 else r['regime']['hi']})</td><td>{escape(r['candidate'])}</td>"
                   f"<td>{'yes' if r['admitted'] else ('best' if r['candidate'] == plan.get('best') else 'no')}</td><td>{escape(r['evidence'])}</td></tr>"
                   for r in plan.get("routes", []))
    best = data.best
    alone = (f"{_x(best.speedup_geomean)} {_ci([best.speedup_lo, best.speedup_hi]) if best.speedup_lo is not None else ''}"
             f" in round {best.round}, as in the rounds table" if best is not None
             else _x(route.get("best_speedup_geomean")))  # fmt: skip
    built = (f"routed solution verified {escape(str(route.get('status')))} in its own verification at "
             f"{_x(route.get('speedup_geomean'))} {_ci(route.get('speedup_ci'))} (best alone {escape(alone)})"
             if route.get("admitted") else "no routed solution built")
    return (f"<h2>Shape routing</h2><section id='route'><p>{built}. {escape(route.get('reason', ''))}</p><table><tr><th>regime</th><th>candidate</th><th>route earned</th>"
            f"<th>evidence</th></tr>{rows}</table></section>")


def render_html(data: RunData) -> str:
    task = str(data.summary.get("task") or data.run_dir.name)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width,initial-scale=1'><title>kloop: {escape(task)}</title>"
            f"<style>{STYLE}</style></head><body><main><h1>kloop run: {escape(task)}</h1>"
            f"{_cards(data)}{_charts(data)}{_workloads(data)}{_route(data)}{_branches(data)}{_spent(data)}{_tree(data)}{_rounds_table(data)}"
            f"{_evidence(data)}<p class='muted'><small>Speedups are geometric means over the task's workloads, "
            f"measured by kloop's verifier against the sealed baseline; a latency is the box's cost per call "
            f"(its CPU time on the CPU, the hand-off included), speedup = baseline latency / latency; every "
            f"interval is a {escape(INTERVAL_METHOD)}."
            f"</small></p></main></body></html>\n")


def write_report(run_dir: Path, lineage: Any = None, summary: Any = None, *, fmt: str = "html",
                 out: Path | None = None) -> Path:
    """Write the report (atomically) from the run directory's files; `summary` may be the loop's model."""
    from kloop.report.markdown import render_markdown

    if summary is not None and hasattr(summary, "model_dump"):
        summary = summary.model_dump(mode="json")
    data = load_run(run_dir, summary)
    text = render_html(data) if fmt == "html" else render_markdown(data)
    path = out or run_dir / ("report.html" if fmt == "html" else "report.md")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
