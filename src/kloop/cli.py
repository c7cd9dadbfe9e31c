"""The `kloop` command line: one root app composed of each capability's command group.

Each capability owns its commands in `<capability>/commands.py` (a `typer.Typer` named `app`,
or top-level command functions). Those modules must not import torch at import time, so that
`kloop --help` stays fast. typer itself is imported only when the app is built: `status`,
`wiki search` and `task show` with plainly parsed flags run without it (`kloop.cli_fast`).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kloop.errors import KloopError, one_line

if TYPE_CHECKING:
    import typer

_APP: typer.Typer | None = None


def _app() -> typer.Typer:
    """The root typer app, built on first use (importing typer costs ~0.05 s; its parsing more)."""
    global _APP
    if _APP is None:
        import typer

        _APP = typer.Typer(
            name="kloop",
            help="Make GPU kernels fast with coding agents in a gated plan -> execute -> verify loop.",
            no_args_is_help=True,
            add_completion=False,
            pretty_exceptions_enable=False,
            # click's plain help, as `llm` prints it: typer's rich help imports rich.markdown and friends,
            # ~0.12 s of a 0.3 s start-up budget; every sub-group inherits the root's mode
            rich_markup_mode=None,
        )
    return _APP


def __getattr__(name: str) -> Any:
    """`kloop.cli.app`, the root typer app, is built when first asked for (PEP 562)."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


GROUPS = {"task": "kloop.task.commands", "profile": "kloop.profile.commands", "wiki": "kloop.wiki.commands",
          "skills": "kloop.skills.commands"}
"""Sub-command groups: each module defines `app = typer.Typer()`."""

GROUP_HELP = {
    "task": "Inspect tasks and import KernelBench problems.",
    "profile": "Profile a kernel, diagnose it (measurement -> mechanism -> fix), compare against a base.",
    "wiki": "KernelWiki: provenance-tracked kernel knowledge (git history + curated cards).",
    "skills": "Agent Skills for coding agents: verify, profile, wiki and the loop.",
}
"""Each group's one-line help, so `kloop --help` lists the groups without importing them
(tests/test_cli_startup.py checks it equals each module's own help)."""

TOP_LEVEL = ("kloop.mcp", "kloop.verify.commands", "kloop.device.commands", "kloop.loop.commands", "kloop.route.commands",
             "kloop.export.commands", "kloop.report.commands", "kloop.pool.commands")
"""Modules whose `register(app)` adds top-level commands (verify, doctor, run, approve, status, tune, route,
export, report)."""


def _import_if_present(module_name: str) -> ModuleType | None:
    """A capability that is not installed is skipped; an error inside one is not hidden."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


def _register(argv: list[str] | None = None) -> None:
    """Attach every capability's commands; for `kloop GROUP ...` only that group's (fast start-up)."""
    import typer

    app = _app()
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    if words and words[0] == "status":  # polled while a run goes on: import only what it needs (< 0.5 s)
        module = _import_if_present("kloop.loop.commands")
        if module is not None:
            module.register(app)
            return
    if words and words[0] in GROUPS:
        module = _import_if_present(GROUPS[words[0]])
        if module is not None:
            app.add_typer(module.app, name=words[0])
            return
    for name, module_name in GROUPS.items():
        if not words and name in GROUP_HELP:  # `kloop --help`: list the group, import it only when used
            app.add_typer(typer.Typer(help=GROUP_HELP[name]), name=name)
            continue
        module = _import_if_present(module_name)
        if module is not None:
            app.add_typer(module.app, name=name)
    for module_name in TOP_LEVEL:
        module = _import_if_present(module_name)
        if module is not None:
            module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: map kloop's errors to exit codes and one clear line, never a traceback.

    Typer handles usage errors itself (exit 2); everything kloop raises is caught here. An argv that
    `kloop.cli_fast` parses runs its command without building the typer app, to the same end.
    """
    from kloop import cli_fast
    from kloop.signals import Interrupted, handled

    fast = cli_fast.plan(sys.argv[1:] if argv is None else list(argv))
    if fast is None:
        _register(argv)
    try:
        with handled():
            if fast is not None:
                cli_fast.run(fast)  # ends in SystemExit, as the typer app does
            else:
                _app()(args=argv, prog_name="kloop")
    except Interrupted as exc:
        print(f"kloop: interrupted by {exc}; stopped everything it started", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except KloopError as exc:
        print(f"kloop: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kloop: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one line, exit 3
        if os.environ.get("KLOOP_DEBUG"):
            traceback.print_exc()
        print(f"kloop: internal error: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
