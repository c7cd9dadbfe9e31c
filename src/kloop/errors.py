"""The error families every layer raises; the CLI maps them to the contract's exit codes.

`BadInput` is the user's mistake (exit 2, one line naming the file and the problem).
`HarnessFailure` is kloop's own failure to judge (exit 3). A candidate that is wrong is
never an exception: it is a verdict.
"""

from __future__ import annotations

from pathlib import Path

MAX_MESSAGE = 400


def one_line(text: str) -> str:
    """A message safe to print as exactly one line: user data may hold newlines or be huge."""
    flat = text.replace("\r", "\\r").replace("\n", "\\n")
    return flat if len(flat) <= MAX_MESSAGE else flat[: MAX_MESSAGE - 3] + "..."


class KloopError(Exception):
    """Base of kloop's own errors."""

    exit_code = 3


class BadInput(KloopError):
    """Malformed or missing input: says what is wrong and where, in one line."""

    exit_code = 2

    def __init__(self, where: str | Path, what: str) -> None:
        self.where = one_line(str(where))
        self.what = one_line(what)
        super().__init__(f"{self.where}: {self.what}")


class HarnessFailure(KloopError):
    """kloop itself could not reach a verdict (not the candidate's fault)."""

    exit_code = 3
