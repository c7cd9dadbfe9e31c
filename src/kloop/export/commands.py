"""`kloop export RUN_DIR --fib DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kloop.errors import BadInput


def export_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    fib: Annotated[Path | None, typer.Option("--fib", help="Write FlashInfer-Trace files under this directory.")] = None,
) -> None:
    """Export the best and the routed solution as FlashInfer-Trace Solution JSON plus Trace lines."""
    from kloop.export.fib import export_run

    if fib is None:
        raise BadInput("kloop export", "--fib DIR is required")
    if not run_dir.is_dir():
        raise BadInput(run_dir, "run directory not found")
    result = export_run(run_dir, fib)
    for path in result.solutions:
        typer.echo(f"solution: {path}")
    typer.echo(f"traces:   {result.traces} ({result.trace_lines} lines)")
    for note in result.skipped:
        typer.echo(f"skipped:  {note}")


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
