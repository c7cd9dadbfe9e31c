"""`kloop profile analyze` and `kloop profile collect` (registered by the CLI as `kloop profile`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    help="Profile a kernel, diagnose it (measurement -> mechanism -> fix), compare against a base.",
    no_args_is_help=True,
)


def _wiki_hits(reports: list[Any]) -> dict[str, list[dict[str, Any]]] | None:
    """KernelWiki hits per finding id; None (after one line on stderr) when no database exists."""
    from kloop.wiki import WikiStore, default_db_path

    path = default_db_path()
    if not path.exists():
        typer.echo(f"kloop: no KernelWiki database at {path}; run `kloop wiki ingest cards` to create one", err=True)
        return None
    store = WikiStore(path)
    hits: dict[str, list[dict[str, Any]]] = {}
    for report in reports:
        vendor = report.profile.vendor.value
        for finding in report.findings:
            if finding.id.value not in hits:
                # `finding:<id>` ranks the cards that name this finding above mere word matches.
                found = store.search(f"{finding.wiki_query} finding:{finding.id.value}", k=3, vendor=vendor)
                hits[finding.id.value] = [h.model_dump(mode="json") for h in found]
    return hits


def _wiki_markdown(hits: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["## KernelWiki", ""]
    for finding, found in hits.items():
        titles = "; ".join(f"{h['title']} ({h['id']})" for h in found) or "no entry"
        lines.append(f"- {finding}: {titles}")
    return "\n".join(lines) + "\n"


@app.command()
def analyze(
    report: Annotated[Path, typer.Argument(help=".ncu-rep, ncu --csv (details/raw), rocprofv3 CSV, rocpd DB or rocprof-compute folder.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the JSON document instead of markdown.")] = False,
    against: Annotated[Path | None, typer.Option("--against", help="Base report to diff against.")] = None,
    min_bytes: Annotated[float | None, typer.Option("--min-bytes", help="Algorithmic minimum DRAM bytes.")] = None,
    min_flops: Annotated[float | None, typer.Option("--min-flops", help="Algorithmic FLOPs.")] = None,
    wiki: Annotated[bool, typer.Option("--wiki", help="Look up each finding's wiki_query in KernelWiki.")] = False,
) -> None:
    """Read a profiler report, rank findings, print the digest with exactly one next edit."""
    from kloop.profile.diff import diff_reports
    from kloop.profile.digest import analyze as run_playbook
    from kloop.profile.digest import digest_json, digest_markdown
    from kloop.profile.read import read

    reports = run_playbook(read(report), min_bytes=min_bytes, min_flops=min_flops)
    diff = None
    if against is not None:
        diff = diff_reports(run_playbook(read(against), min_bytes=min_bytes, min_flops=min_flops), reports)
    hits = _wiki_hits(reports) if wiki else None
    if json_output:
        document = digest_json(reports, diff)
        if hits is not None:
            for kernel in document["kernels"]:
                for finding in kernel["findings"]:
                    finding["wiki_hits"] = hits.get(finding["id"], [])
        typer.echo(json.dumps(document, indent=2))
        return
    typer.echo(digest_markdown(reports, diff), nl=False)
    if hits is not None:
        typer.echo("\n" + _wiki_markdown(hits), nl=False)


@app.command()
def collect(
    task: Annotated[Path, typer.Argument(help="Task directory.")],
    solution: Annotated[Path, typer.Argument(help="Solution directory or FIB Solution JSON.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Directory for the report and digest.")],
    tool: Annotated[str, typer.Option("--tool", help="ncu, rocprofv3 or rocprof-compute.")] = "ncu",
    workload: Annotated[str | None, typer.Option("--workload", help="Workload uuid (default: the first).")] = None,
) -> None:
    """Run the profiler around one workload of the candidate, then write report + digest into DIR."""
    from kloop.errors import BadInput
    from kloop.profile.collect import Tool
    from kloop.profile.collect import collect as run_collect

    try:
        chosen = Tool(tool)
    except ValueError as exc:
        raise BadInput("--tool", f"unknown profiler {tool!r} (ncu, rocprofv3, rocprof-compute)") from exc
    digest = run_collect(task, solution, out, tool=chosen, workload=workload)
    typer.echo(digest.read_text(), nl=False)
