"""Turning parse and validation failures into BadInput's one line (what, and where)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kloop.errors import BadInput

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem pydantic found, as `field a.b: message`, plus how many more."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        text = f"missing field {loc!r}"
    elif first["type"] == "enum" or first["type"] == "literal_error":
        text = f"field {loc!r}: {msg}, got {first.get('input')!r}"
    else:
        text = f"field {loc!r}: {msg}" if loc else msg
    more = len(errors) - 1
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def validate(model: type[M], data: Any, where: str | Path) -> M:
    """`model.model_validate(data)`, or BadInput naming `where` and the first problem."""
    if not isinstance(data, dict):
        raise BadInput(where, f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInput(where, describe_validation_error(exc)) from None
    except RecursionError:
        raise BadInput(where, "document is nested too deeply") from None


MAX_TEXT_BYTES = 64 * 1024 * 1024  # task files are text; anything larger is a mistake or an attack


def read_text(path: Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A file's UTF-8 text, or BadInput saying it is missing, unreadable or too large."""
    if not path.exists():
        raise BadInput(path, f"{what} not found")
    if not path.is_file():
        raise BadInput(path, f"{what} is not a file")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise BadInput(path, f"{what} is {size} bytes, more than the {max_bytes} allowed")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(path, f"{what} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise BadInput(path, f"cannot read {what}: {exc.strerror}") from None


def parse_json(text: str, where: str | Path) -> Any:
    """Parse JSON text, or BadInput with the line and column of the syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(where, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise BadInput(where, "JSON is nested too deeply") from None


def read_json(path: Path, what: str) -> Any:
    """Read and parse a JSON file; every failure is one BadInput line naming the file."""
    return parse_json(read_text(path, what), path)
