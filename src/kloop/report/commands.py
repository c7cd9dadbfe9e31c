"""`kloop report RUN_DIR [--format html|md] [--out FILE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kloop.errors import BadInput


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory, in progress or finished.")],
    fmt: Annotated[str, typer.Option("--format", help="html (one self-contained file) or md.")] = "html",
    out: Annotated[Path | None, typer.Option("--out", help="Where to write (default RUN_DIR/report.html or .md).")] = None,
) -> None:
    """Write the run's report: summary, charts, lineage, evidence per round, per-workload table."""
    from kloop.report.html import write_report

    if fmt not in ("html", "md"):
        raise BadInput("--format", f"unknown format {fmt!r} (html or md)")
    if not (run_dir / "lineage.sqlite").is_file():
        raise BadInput(run_dir, "not a kloop run directory (no lineage.sqlite)")
    typer.echo(str(write_report(run_dir, fmt=fmt, out=out)))


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
