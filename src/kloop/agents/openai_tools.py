"""The `openai:` agent's tools: role-fixed sets over one workspace, each checked before it acts.

A role gets a fixed tool set, decided here and not by the prompt: the reviewer can only look
(list, read, profile, wiki) and hand in its verdict (`submit_verdict`, the verdict contract as a strict
schema: the only channel its verdict comes through, never its text); the researcher can also write under `notes/`; the writer can write
under `solution/` and `notes/`, run commands and verify. A write outside the role's folders is
refused before it happens and recorded as a permission denial. Commands run in a shell wrapped
by `containment.contain` (workspace and the call's own home/tmp writable, nothing else), with a
scrubbed environment (no API keys) and the call's remaining time as their limit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from kloop.agents import kloop_tools, verdict_mcp
from kloop.agents.base import Role, Verdict
from kloop.errors import KloopError

MAX_READ = 200_000
MAX_OUTPUT = 12_000
WRITE_ROOTS: dict[Role, tuple[str, ...]] = {
    Role.writer: ("solution", "notes"),
    Role.researcher: ("notes",),
    Role.reviewer: (),
}
"""Where each role may write, relative to the workspace (rules as data)."""
VERDICT_TOOL, VERDICT_DESCRIPTION = verdict_mcp.TOOL, verdict_mcp.DESCRIPTION  # one verdict tool, two transports


class ListArgs(BaseModel):
    path: str = Field(default=".", description="Directory relative to the workspace.")


class ReadArgs(BaseModel):
    path: str = Field(description="File relative to the workspace (the task is at ../sealed/).")


class WriteArgs(BaseModel):
    path: str = Field(description="File relative to the workspace, under an allowed folder.")
    content: str = Field(description="The whole new content of the file.")


class CommandArgs(BaseModel):
    command: str = Field(description="A bash command, run in the workspace.")
    timeout_s: float = Field(default=300.0, description="Seconds before the command is killed.")


class VerifyArgs(BaseModel):
    workloads: int | None = Field(default=None, description="Verify only the first N workloads (default all).")
    timing: bool = Field(default=True, description="Also time the candidate against the baseline.")


class ProfileArgs(BaseModel):
    report: str = Field(description="Profiler report path relative to the workspace.")
    against: str | None = Field(default=None, description="Base report to diff against.")


class WikiArgs(BaseModel):
    query: str = Field(description="Words; inline vendor:/arch:/kind:/finding: filters work.")
    k: int = Field(default=5, description="How many hits (at most 20).")


@dataclass
class ToolBox:
    """One call's tools: the workspace, the role's limits and what was refused."""

    role: Role
    workspace: Path
    task_dir: Path | None
    deadline: Callable[[], float]
    command_argv: Callable[[str], list[str]] | None = None
    command_env: dict[str, str] = field(default_factory=dict)
    wiki_db: Path | None = None
    home: Path | None = None
    denials: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # kloop's tool policy refused these (contained_denials lines)
    verdict: Verdict | None = None  # the reviewer's verdict: the arguments of its last submit_verdict call

    def refused_attempts(self, audit_log: Path) -> list[str]:
        """What this call was refused, from kloop's own evidence: its tool policy, and the audit of the
        commands it ran (failed syscalls seen from outside), in `contained_denials` form."""
        from kloop.agents.audit import denials_in_log, forbidden
        from kloop.agents.cli_process import allowed_roots_for

        seen = denials_in_log(audit_log, self.workspace)
        roots = allowed_roots_for(self.workspace, self.home or self.workspace, [])
        return [*self.refused, *(d.line() for d in forbidden(seen, roots))]

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list for this role."""
        specs = [
            {"type": "function", "function": {"name": name, "description": desc,
                                              "parameters": model.model_json_schema()}}
            for name, (model, _, desc) in self._table().items() if name != VERDICT_TOOL
        ]  # fmt: skip
        if self.role is Role.reviewer:  # the verdict contract itself, strict: the provider enforces it
            from kloop.agents.codex import verdict_schema

            specs.append({"type": "function", "function": {"name": VERDICT_TOOL, "description": VERDICT_DESCRIPTION,
                                                           "parameters": verdict_schema(), "strict": True}})
        return specs

    def call(self, name: str, arguments: str) -> str:
        """Run one tool call; every failure is an answer the model can read, never an exception."""
        entry = self._table().get(name)
        if entry is None:
            self.denials.append(f"{name}: no such tool for the {self.role.value} role")
            return f"error: no tool named {name!r} is available to the {self.role.value}"
        model, fn, _ = entry
        try:
            args = model.model_validate(json.loads(arguments or "{}"))
        except (ValueError, ValidationError) as exc:
            return f"error: bad arguments for {name}: {str(exc).splitlines()[0]}"
        try:
            return fn(args)
        except KloopError as exc:
            return f"error: {exc}"
        except OSError as exc:
            return f"error: {exc.strerror or exc}"
        except Exception as exc:  # a broken tool is an answer the model can route around, not a crash
            return f"error: {name} failed inside kloop: {type(exc).__name__}: {exc}"

    def _table(self) -> dict[str, tuple[type[BaseModel], Callable[[Any], str], str]]:
        table: dict[str, tuple[type[BaseModel], Callable[[Any], str], str]] = {
            "list_files": (ListArgs, self._list, "List a directory of the workspace."),
            "read_file": (ReadArgs, self._read, "Read a text file of the workspace or the task."),
            "profile_analyze": (ProfileArgs, self._profile, "Diagnose a profiler report: findings, one next edit."),
            "wiki_search": (WikiArgs, self._wiki, "Search KernelWiki (techniques, upstream PRs); cite ids."),
        }
        if WRITE_ROOTS[self.role]:
            roots = ", ".join(f"{r}/" for r in WRITE_ROOTS[self.role])
            table["write_file"] = (WriteArgs, self._write, f"Write a whole file under {roots} only.")
        if self.role is Role.reviewer:
            table[VERDICT_TOOL] = (Verdict, self._verdict, VERDICT_DESCRIPTION)
        if self.role is Role.writer:
            table["run_command"] = (CommandArgs, self._command, "Run a bash command in the workspace (contained).")
            if self.task_dir is not None:
                table["verify"] = (VerifyArgs, self._verify, "Verify solution/ with kloop's hermetic verifier.")
        return table

    def _resolve(self, rel: str, *, for_write: bool) -> Path:
        """`rel` inside the workspace (or, for reading, the task); symlinks are not followed out."""
        base = self.workspace.resolve()
        target = (base / rel).resolve()
        readable = [base] + ([self.task_dir.resolve()] if self.task_dir is not None and not for_write else [])
        if not any(target == r or r in target.parents for r in readable):
            raise PermissionError(f"{rel}: outside the workspace")
        if for_write:
            inside = target.relative_to(base).parts
            if not inside or inside[0] not in WRITE_ROOTS[self.role] or len(inside) < 2:
                raise PermissionError(f"{rel}: the {self.role.value} may write only under "
                                      + ", ".join(f"{r}/" for r in WRITE_ROOTS[self.role]))
        return target

    def _guard(self, name: str, rel: str, *, for_write: bool) -> Path | str:
        try:
            return self._resolve(rel, for_write=for_write)
        except PermissionError as exc:
            self.denials.append(f"{name}: {exc}")
            target = os.path.normpath(os.path.join(str(self.workspace), rel))
            self.refused.append(f"{'write' if for_write else 'read'} {target} ({name}: refused by kloop's tool policy)")
            return f"refused: {exc}"

    def _verdict(self, args: Verdict) -> str:
        self.verdict = args
        return f"verdict recorded: {args.decision.value}"

    def _list(self, args: ListArgs) -> str:
        target = self._guard("list_files", args.path, for_write=False)
        if isinstance(target, str):
            return target
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir() if p.name != ".git")
        return "\n".join(entries) or "(empty)"

    def _read(self, args: ReadArgs) -> str:
        target = self._guard("read_file", args.path, for_write=False)
        if isinstance(target, str):
            return target
        data = target.read_bytes()[:MAX_READ]
        return data.decode("utf-8", errors="replace")

    def _write(self, args: WriteArgs) -> str:
        target = self._guard("write_file", args.path, for_write=True)
        if isinstance(target, str):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(args.content)
        return f"wrote {len(args.content)} characters to {args.path}"

    def _command(self, args: CommandArgs) -> str:
        if self.command_argv is None:
            self.denials.append("run_command: no containment runs on this machine")
            return "refused: commands need kloop's containment, and none runs on this machine"
        limit = max(1.0, min(args.timeout_s, self.deadline()))
        proc = subprocess.Popen(self.command_argv(args.command), cwd=self.workspace, env=self.command_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return _tail(out) + f"\n[killed after {limit:.0f} s]"
        return _tail(out) + f"\n[exit {proc.returncode}]"

    def _verify(self, args: VerifyArgs) -> str:
        assert self.task_dir is not None
        return kloop_tools.verify_solution(self.task_dir, self.workspace / "solution",
                                           workloads=args.workloads, timing=args.timing)  # fmt: skip

    def _profile(self, args: ProfileArgs) -> str:
        report = self._guard("profile_analyze", args.report, for_write=False)
        if isinstance(report, str):
            return report
        against = self._guard("profile_analyze", args.against, for_write=False) if args.against else None
        if isinstance(against, str):
            return against
        return kloop_tools.profile_analyze(report, against=against)

    def _wiki(self, args: WikiArgs) -> str:
        return kloop_tools.wiki_search(args.query, k=args.k, db=self.wiki_db)


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= MAX_OUTPUT else "[... cut ...]\n" + text[-MAX_OUTPUT:]
