"""Schemas of the sandbox's replies: every reply is untrusted data, checked before any field is used.

A reply whose fields have the wrong types (a string where a list of thread names belongs, a list
where a flag belongs) used to reach the supervisor's code and end in an AttributeError, exit 3.
Now `validate` turns it into a `ProtocolViolation`, which rejects the candidate (`protocol`) with
the field that was wrong. Extra fields are allowed (the harness may say more than is read);
strings and lists are bounded so no field can carry more than a verdict needs.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from kloop.verify.channel import ProtocolViolation

Text = Annotated[StrictStr, Field(max_length=20_000)]
Names = Annotated[list[Annotated[StrictStr, Field(max_length=1000)]], Field(max_length=10_000)]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: StrictBool | None = None
    """Whether the request succeeded (hello has none)."""
    kind: Text | None = None
    """What failed: compile, runtime, protocol."""
    error: Text | None = None
    new_threads: Names | None = None
    """Threads the harness saw (a cross-check: the supervisor counts the box's threads itself)."""
    violations: Names | None = None
    """Refusals the audit hook recorded (a cross-check: Landlock's refusals are the kernel's)."""


class _Output(BaseModel):
    model_config = ConfigDict(extra="allow")

    index: StrictInt
    type: Text
    exact_type: StrictBool
    dtype: Text | None = None
    shape: Annotated[list[StrictInt], Field(max_length=64)] | None = None
    error: Text | None = None


class _Build(_Reply):
    filesystem: Text | None = None
    cache_key: Text | None = None
    cache_hit: StrictBool | None = None
    manifest: dict[str, Any] | None = None
    refused: Text | None = None


class _Load(_Build):
    language: Text | None = None
    destination_passing: StrictBool | None = None
    timing_meaningful: StrictBool | None = None


class _Run(_Reply):
    outputs: Annotated[list[_Output], Field(max_length=1000)] | None = None
    elapsed_ns: StrictInt | None = None


class _Batch(_Reply):
    times_ns: Annotated[list[StrictInt], Field(max_length=1 << 20)] | None = None
    bad: Annotated[list[StrictInt], Field(max_length=1 << 20)] | None = None


SCHEMAS: dict[str, type[_Reply]] = {"build": _Build, "load": _Load, "run": _Run, "batch_report": _Batch}


def validate(op: str | None, header: dict[str, Any]) -> None:
    """Raise ProtocolViolation when the reply to `op` does not fit its schema (one line: the field)."""
    try:
        SCHEMAS.get(str(op), _Reply).model_validate(header)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
        raise ProtocolViolation(f"malformed {op} reply: {where}: {first.get('msg', 'invalid')}") from None
