"""The commands typed or polled most (`status`, `wiki search`, `task show`) without building the typer app.

typer 0.29 imports pydantic and builds a TypeAdapter for every parameter it parses, after building
the click command tree: about 0.1-0.15 s on this machine, more than these commands' own work.
`plan()` parses an argv these commands' flags read one way only and returns the call typer would
make, with the same values (the function's own defaults for what is not given); for anything else
(`--help`, an unknown, repeated or `=`-joined flag, a missing value, a value that starts with `-`,
`--`, an extra argument, a non-canonical integer, ...) it returns None and the typer app handles
the argv, so usage errors, help and their exit codes stay typer's. `run()` then behaves as typer's
standalone mode does around a command: exit 0 after it returns, 130 on KeyboardInterrupt, 1 on a
broken pipe, and kloop's own errors pass up to `kloop.cli.main` as they do from typer.
"""

from __future__ import annotations

import codecs
import errno
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # click's strip_ansi pattern
_INT = re.compile(r"0|[1-9][0-9]{0,8}")


def echo(message: str = "") -> None:
    """typer.echo(message) to stdout, byte for byte: ANSI codes stripped unless stdout is a terminal, flushed.

    Only called where `_plain_stdout()` held, i.e. where click would write to sys.stdout as it is.
    """
    out = message + "\n"
    stream = sys.stdout
    if not _isatty(stream) and not type(stream).__module__.startswith("ipykernel."):
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def _plain_stdout() -> bool:
    """click writes to sys.stdout unchanged when its encoding is set and not ASCII (else it may re-wrap it)."""
    stream = sys.stdout
    if stream is None or isinstance(stream, (bytes, bytearray)):
        return False
    encoding = getattr(stream, "encoding", None)
    if not encoding or getattr(stream, "errors", None) is None:
        return not hasattr(stream, "buffer") and hasattr(stream, "write")  # a StringIO: click writes to it as is
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return False


class Spec(NamedTuple):
    """One command's grammar: its positionals (name, type, required), its options (flag -> name, type)
    and its boolean flags (flag -> name). A NamedTuple: `dataclasses` would import `inspect` (~10 ms)."""

    positionals: tuple[tuple[str, type, bool], ...]
    options: dict[str, tuple[str, type]]
    call: Callable[[dict[str, Any]], None]
    flags: dict[str, str]


def _status(kwargs: dict[str, Any]) -> None:
    from kloop.loop.approval import show_status

    show_status(**kwargs, echo=echo)


def _wiki_search(kwargs: dict[str, Any]) -> None:
    from kloop.wiki.search_command import run_search

    run_search(**kwargs, echo=echo)


def _task_show(kwargs: dict[str, Any]) -> None:
    from kloop.task.show import show_task

    show_task(kwargs.pop("task", None), **kwargs, echo=echo)


SPECS: dict[tuple[str, ...], Spec] = {
    ("status",): Spec(positionals=(("run_dir", Path, True),), options={}, flags={"--json": "as_json"}, call=_status),
    ("wiki", "search"): Spec(
        positionals=(("query", str, True),),
        options={"-k": ("k", int), "--vendor": ("vendor", str), "--arch": ("arch", str), "--tag": ("tag", str),
                 "--kind": ("kind", str), "--db": ("db", Path)},
        flags={"--no-aliases": "no_aliases", "--semantic": "semantic", "--json": "as_json"},
        call=_wiki_search),
    ("task", "show"): Spec(
        positionals=(("task", Path, False),),
        options={"--fib-root": ("fib_root", Path), "--definition": ("definition", str)},
        flags={"--json": "as_json"}, call=_task_show),
}  # fmt: skip
"""Each command's flags exactly as its typer signature declares them (tests/test_cli_startup.py checks it)."""


def _value(kind: type, text: str) -> Any:
    """The value typer would pass, or None where this parser leaves the text to typer."""
    if kind is int:
        return int(text) if _INT.fullmatch(text) else None
    if kind is Path:
        return Path(text) if text else None
    return text


def plan(args: list[str]) -> Callable[[], None] | None:
    """The command call for `args`, or None where the typer app must parse them."""
    spec = next((s for words, s in SPECS.items() if tuple(args[: len(words)]) == words), None)
    if spec is None or not _plain_stdout():
        return None
    words = 2 if args[0] != "status" else 1
    kwargs: dict[str, Any] = {}
    positionals: list[str] = []
    rest = args[words:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token in spec.flags:
            name = spec.flags[token]
            if name in kwargs:
                return None
            kwargs[name] = True
        elif token in spec.options:
            name, kind = spec.options[token]
            if name in kwargs or i + 1 >= len(rest) or rest[i + 1].startswith("-"):
                return None
            value = _value(kind, rest[i + 1])
            if value is None:
                return None
            kwargs[name] = value
            i += 1
        elif token.startswith("-"):
            return None
        else:
            positionals.append(token)
        i += 1
    if len(positionals) > len(spec.positionals):
        return None
    for (name, kind, required), text in zip(spec.positionals, positionals + [None] * len(spec.positionals), strict=False):
        if text is None:
            if required:
                return None
            continue
        value = _value(kind, text)
        if value is None:
            return None
        kwargs[name] = value
    return lambda: spec.call(kwargs)


def run(call: Callable[[], None]) -> None:
    """Run the planned call as typer's standalone mode would: always ends in SystemExit."""
    try:
        call()
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)  # type: ignore[assignment]
        sys.stderr = _Pacified(sys.stderr)  # type: ignore[assignment]
        sys.exit(1)
    sys.exit(0)


class _Pacified:
    """click's PacifyFlushWrapper: a broken pipe's last flush at exit stays silent."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)
