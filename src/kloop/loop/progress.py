"""The live view of a run: round, stage, step, best speedup, elapsed.

`RichProgress` draws a one-panel live display on a terminal; `PlainProgress` prints a line per
step change (logs, CI); `NullProgress` says nothing (tests, embedding).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol


class ProgressView(Protocol):
    def update(self, **fields: Any) -> None: ...

    def close(self) -> None: ...


class NullProgress:
    def update(self, **fields: Any) -> None:
        return None

    def close(self) -> None:
        return None


class _Fields:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {"round": "-", "stage": "-", "step": "-", "best": None, "note": ""}
        self.started = time.monotonic()

    def merge(self, fields: dict[str, Any]) -> None:
        self.values.update({k: v for k, v in fields.items() if v is not None})

    def line(self) -> str:
        v = self.values
        best = f"{v['best']:.2f}x" if isinstance(v["best"], float) else "-"
        elapsed = time.monotonic() - self.started
        note = f"  {v['note']}" if v["note"] else ""
        return (f"round {v['round']}  stage {v['stage']}  step {v['step']}  best {best}  "
                f"elapsed {elapsed:5.0f}s{note}")


class PlainProgress:
    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.fields = _Fields()
        self.last = ""

    def update(self, **fields: Any) -> None:
        """One line per round result or stage change; steps only show in the live view."""
        self.fields.merge(fields)
        key = f"{self.fields.values['stage']}|{self.fields.values['note']}"
        if key != self.last and ("note" in fields or "stage" in fields):
            self.last = key
            print(f"kloop: {self.fields.line()}", file=self.stream, flush=True)

    def close(self) -> None:
        return None


class RichProgress:
    """A live panel on stderr, refreshed as the campaign reports steps."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.fields = _Fields()
        self.console = Console(stderr=True)
        self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=False)
        self.live.start()

    def _render(self) -> Any:
        from rich.table import Table

        v = self.fields.values
        table = Table.grid(padding=(0, 2))
        for name in ("round", "stage", "step"):
            table.add_row(f"[bold]{name}[/]", str(v[name]))
        best = f"{v['best']:.2f}x" if isinstance(v["best"], float) else "-"
        table.add_row("[bold]best[/]", best)
        table.add_row("[bold]elapsed[/]", f"{time.monotonic() - self.fields.started:.0f}s")
        if v["note"]:
            table.add_row("[bold]last[/]", str(v["note"]))
        return table

    def update(self, **fields: Any) -> None:
        self.fields.merge(fields)
        self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()


def default_progress() -> ProgressView:
    return RichProgress() if sys.stderr.isatty() else PlainProgress()
