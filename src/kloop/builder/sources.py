"""Writing a solution's sources into a build directory, never outside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kloop.builder.result import BuildError


def write_sources(solution: Any, root: Path) -> list[Path]:
    """Write every source under `root` (sub-folders created); refuse paths that escape it."""
    root = root.resolve()
    written: list[Path] = []
    for src in solution.sources:
        target = (root / src.path).resolve()
        if not target.is_relative_to(root):
            raise BuildError(f"source path {src.path!r} escapes the solution directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src.content)
        written.append(target)
    return written


def entry_parts(solution: Any) -> tuple[str, str]:
    """(entry file, entry symbol) of `FILE::SYMBOL`."""
    file_part, _, symbol = solution.spec.entry_point.partition("::")
    return file_part, symbol


def shorten(text: str, *, max_lines: int = 12, max_chars: int = 1500) -> str:
    """At most `max_lines` lines and `max_chars` characters, marking what was cut."""
    lines = text.strip().splitlines()
    cut = len(lines) > max_lines
    out = "\n".join(lines[:max_lines])
    if len(out) > max_chars:
        out, cut = out[:max_chars], True
    return out + ("\n[...]" if cut else "")
