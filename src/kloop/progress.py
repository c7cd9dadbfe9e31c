"""A live one-line status for commands that take more than a moment (verify, import, ingest).

Commands open `live()` once; layers below report with `step("...")`, which costs nothing and
prints nothing when no live status is open, when stderr is not a terminal, or under `--json`.
The status is transient (rich clears it when the command ends), so it never mixes with results.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

QUIET_ENV = "KLOOP_NO_PROGRESS"

_lock = threading.Lock()
_status: Any = None
_started = 0.0
_title = ""


def wanted(json_output: bool = False) -> bool:
    """Show progress only on a terminal, never with machine-readable output or when switched off."""
    return not json_output and sys.stderr.isatty() and not os.environ.get(QUIET_ENV)


@contextmanager
def live(title: str, *, enabled: bool | None = None) -> Iterator[None]:
    """Show a spinner with `title` and the latest step until the block ends (nested calls: no-op)."""
    global _status, _started, _title
    show = wanted() if enabled is None else enabled
    with _lock:
        if _status is not None or not show:
            show = False
        else:
            from rich.console import Console

            _status = Console(stderr=True).status(title, spinner="dots")
            _started, _title = time.monotonic(), title
            _status.start()
    try:
        yield
    finally:
        if show:
            with _lock:
                _status.stop()
                _status = None


def step(text: str) -> None:
    """Report what the command is doing now (a no-op when no live status is showing)."""
    if _status is None:
        return
    from rich.markup import escape

    with _lock:
        if _status is not None:
            elapsed = time.monotonic() - _started
            _status.update(f"{escape(_title)}: {escape(text)}  [dim]{elapsed:.0f}s[/]")
