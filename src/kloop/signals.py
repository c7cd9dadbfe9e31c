"""SIGINT and SIGTERM end any kloop command cleanly: nothing it started outlives it.

Sandboxes run in their own sessions (so a terminal's Ctrl-C never reaches them, and a timeout can
kill each as a group), which also means nothing kills them when kloop dies. The handler kills
every descendant's process group first, then raises `Interrupted` so `finally` blocks still save
state, and the CLI prints one line and exits 128 + the signal number (130, 143). `Interrupted`
is a BaseException, like KeyboardInterrupt, so no `except Exception` on the way swallows it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):  # noqa: N818 -- a stop signal, named like KeyboardInterrupt
    """The command was told to stop by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


def kill_descendants() -> int:
    """SIGKILL every descendant and its process group (when it leads its own); returns how many."""
    import psutil

    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0
    own = os.getpgrp()
    for kid in kids:
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error, OSError):
            group = os.getpgid(kid.pid)
            if group != own:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(psutil.Error):
            kid.kill()
    psutil.wait_procs(kids, timeout=3)
    return len(kids)


_fired = False


def _handle(signum: int, frame: FrameType | None) -> None:
    global _fired
    kill_descendants()
    if _fired:  # a second signal while cleaning up: stop now
        os._exit(128 + signum)
    _fired = True
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Install the handlers for the duration of one command (and restore the previous ones)."""
    global _fired
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    _fired = False
    previous = {sig: signal.getsignal(sig) for sig in HANDLED}
    for sig in HANDLED:
        signal.signal(sig, _handle)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
