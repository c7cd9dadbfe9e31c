"""`kloop skills install --target claude|codex|kimi|agents DIR` (registered as `kloop skills`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Agent Skills for coding agents: verify, profile, wiki and the loop.", no_args_is_help=True)


@app.command("install")
def install_command(
    directory: Annotated[Path, typer.Argument(help="Project (workspace) root to install into.")],
    target: Annotated[str, typer.Option("--target", help="claude, codex, kimi or agents.")],
) -> None:
    """Write kloop's SKILL.md folders where the target agent looks for project skills."""
    from kloop.skills import install

    for path in install(target, directory):
        typer.echo(str(path))
