"""`openai:MODEL`: kloop's own tool-calling agent for any OpenAI-compatible endpoint.

One loop, mini-swe-agent style: send the conversation, run the tool calls the model asks for,
append their results, repeat until the model answers without a tool call (its final message),
the turn limit or the call's time limit. It speaks Chat Completions through the official `openai`
SDK, which every OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, hosted APIs) serves.

Endpoint: `KLOOP_OPENAI_BASE_URL` or `OPENAI_BASE_URL`, key `KLOOP_OPENAI_API_KEY` or
`OPENAI_API_KEY` (a local server without auth may leave the key out when a base URL is set).
Every request and tool result goes to a JSONL transcript; tokens come from the API's usage.
Each request's timeout is the call's remaining time, so a server that hangs ends the call.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from kloop.agents.base import AgentRequest, AgentResult, AgentStatus, Claim, Role
from kloop.agents.openai_tools import WRITE_ROOTS, ToolBox
from kloop.errors import BadInput

DEFAULT_MAX_TURNS = 60
CLOSE_MARGIN_S = 3.0
SYSTEM = {
    Role.writer: "You are the writer in kloop, a loop that makes GPU kernels fast. Change files under solution/ "
    "(and notes/) with write_file, check your work with verify, use profile_analyze and wiki_search to decide "
    "what to change. When done, answer without calling a tool: that answer is your claim.",
    Role.researcher: "You are the researcher in kloop. Read the task (../sealed/), the wiki and the baseline "
    "profile, then write notes/plan.md with write_file: hypotheses, the one first edit, acceptance criteria. "
    "When done, answer without calling a tool.",
    Role.reviewer: "You are a read-only reviewer in kloop. You can look but not change anything. Judge the "
    "evidence in the prompt, then hand in your verdict by calling submit_verdict once (a verdict written as "
    "text is not read), and end with a one-line answer without calling a tool.",
}


class OpenAIAgent:
    """The `openai:MODEL` agent: Chat Completions with kloop's role-fixed tools."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 max_turns: int = DEFAULT_MAX_TURNS, wiki_db: Path | None = None) -> None:  # fmt: skip
        self.model = model
        self.base_url = base_url or _env("KLOOP_OPENAI_BASE_URL", "OPENAI_BASE_URL")
        self.api_key = api_key or _env("KLOOP_OPENAI_API_KEY", "OPENAI_API_KEY")
        if self.api_key is None and self.base_url is None:
            raise BadInput(f"openai:{model}", "no endpoint: set OPENAI_BASE_URL (or KLOOP_OPENAI_BASE_URL) "
                           "and, unless the server needs none, OPENAI_API_KEY")
        self.max_turns = max_turns
        self.wiki_db = wiki_db

    def run(self, request: AgentRequest) -> AgentResult:
        """One call: a fresh conversation, the role's tools, the request's time limit as a total deadline
        (the gateway closes the model connection at it), every model request through the call's gateway."""
        from kloop.agents.cli_process import _own_limit, gateway_account
        from kloop.agents.gateway import Gateway

        start = time.monotonic()
        # Ends before the loop stops waiting for this thread: the closed connection takes a moment
        # (measured up to ~2 s on a loaded 2-core box) to reach the SDK's blocking read.
        limit = max(1.0, _own_limit(request.time_limit_s) - CLOSE_MARGIN_S)
        remaining = lambda: limit - (time.monotonic() - start)  # noqa: E731
        home = Path(tempfile.mkdtemp(prefix="kloop-openai-home-"))
        transcript = _transcript_path(request)
        audit_log = transcript.with_name(transcript.stem + ".audit.log")
        try:
            with transcript.open("w") as log, Gateway(
                self.base_url or "https://api.openai.com/v1", self.api_key, usd_limit=request.cost_limit_usd,
                token_limit=request.token_limit, deadline_s=limit,
                log_path=transcript.with_name(transcript.stem + ".gateway.jsonl")) as gw:
                box = self._toolbox(request, home, remaining, audit_log)
                result = self._loop(request, box, log, remaining, transcript, gw)
            result = gateway_account(result, gw)
            return result.model_copy(update={"contained_denials": box.refused_attempts(audit_log)})
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def _toolbox(self, request: AgentRequest, home: Path, remaining: Any, audit_log: Path) -> ToolBox:
        sealed = request.workspace.parent / "sealed"
        task_dir = sealed if (sealed / "definition.json").is_file() else None
        role = Role.reviewer if request.read_only else request.role  # read-only always means the reviewer's tools
        return ToolBox(role=role, workspace=request.workspace, task_dir=task_dir, deadline=remaining,
                       command_argv=_command_runner(request.workspace, home, sealed, audit_log),
                       command_env=_command_env(home), wiki_db=self.wiki_db, home=home)  # fmt: skip

    def _loop(self, request: AgentRequest, box: ToolBox, log: TextIO, remaining: Any, path: Path,
              gw: Any) -> AgentResult:  # fmt: skip
        from openai import APIConnectionError, APIError, APITimeoutError, OpenAI

        client = OpenAI(base_url=gw.client_url, api_key=gw.token, max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM[request.role]},
                                          {"role": "user", "content": request.prompt}]  # fmt: skip
        _log(log, "start", model=self.model, role=request.role.value, tools=[t["function"]["name"] for t in box.specs()],
             messages=messages)  # fmt: skip
        tokens = 0
        for turn in range(self.max_turns):
            if remaining() <= 0:
                return self._result(AgentStatus.timed_out, request, box, path, tokens, "time limit reached")
            try:
                reply = client.chat.completions.create(model=self.model, messages=messages, tools=box.specs(),
                                                       timeout=max(remaining(), 0.1))  # fmt: skip
            except APITimeoutError:
                _log(log, "timeout", turn=turn)
                return self._result(AgentStatus.timed_out, request, box, path, tokens, "model server did not answer in time")
            except (APIConnectionError, APIError) as exc:
                _log(log, "error", turn=turn, error=str(exc))
                if gw.account.cut or remaining() <= 0:  # the gateway closed the answer at the deadline
                    return self._result(AgentStatus.timed_out, request, box, path, tokens,
                                        "model connection closed at the call's deadline")
                return self._result(AgentStatus.crashed, request, box, path, tokens, f"model server: {exc}")
            tokens += reply.usage.total_tokens if reply.usage else 0
            message = reply.choices[0].message
            _log(log, "reply", turn=turn, message=message.model_dump(exclude_none=True),
                 usage=reply.usage.model_dump() if reply.usage else None)  # fmt: skip
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return self._result(AgentStatus.completed, request, box, path, tokens, message.content or "")
            for tool_call in message.tool_calls:
                fn = getattr(tool_call, "function", None)
                name, args = (fn.name, fn.arguments) if fn is not None else ("?", "{}")
                output = box.call(name, args)
                _log(log, "tool", turn=turn, name=name, arguments=args, output=output)
                messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": output})
        return self._result(AgentStatus.over_budget, request, box, path, tokens,
                            f"turn limit reached ({self.max_turns} model calls)")  # fmt: skip

    def _result(self, status: AgentStatus, request: AgentRequest, box: ToolBox, path: Path, tokens: int,
                final: str) -> AgentResult:  # fmt: skip
        # A reviewer's verdict is its submit_verdict call, never its text (which may quote the writer's).
        verdict = box.verdict if box.role is Role.reviewer and status is AgentStatus.completed else None
        claim = Claim(text=final) if request.role is Role.writer and status is AgentStatus.completed else None
        return AgentResult(status=status, final_message=final, claim=claim, verdict=verdict, transcript_path=path,
                           tokens=tokens or None, permission_denials=list(box.denials))  # fmt: skip


def _env(*names: str) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _transcript_path(request: AgentRequest) -> Path:
    folder = request.artifacts_dir or Path(tempfile.mkdtemp(prefix="kloop-openai-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"transcript-openai-{request.role.value}.jsonl"


def _log(stream: TextIO, event: str, **data: Any) -> None:
    stream.write(json.dumps({"event": event, "t": round(time.time(), 3), **data}, default=str) + "\n")
    stream.flush()


def _command_env(home: Path) -> dict[str, str]:
    """What a command sees: a PATH, its own home and tmp; never the endpoint's key."""
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return {"PATH": path, "HOME": str(home), "TMPDIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1",
            "LANG": os.environ.get("LANG", "C.UTF-8")}  # fmt: skip


def _command_runner(workspace: Path, home: Path, sealed: Path, audit_log: Path) -> Any:
    """`bash -c CMD` inside kloop's containment (reads limited to the allow-list), under the audit of
    refused syscalls; None (commands refused) where no containment runs."""
    from kloop.agents.audit import audited
    from kloop.agents.cli_process import readable_for
    from kloop.agents.containment import contain, mechanisms

    ran = mechanisms()
    if not ran:
        return None
    namespace = "mount-namespace" in ran
    protect = [sealed] if sealed.exists() else []
    readable = readable_for(workspace, [])
    return lambda command: audited(contain(["bash", "-c", command], writable=[workspace, home], protect=protect,
                                           namespace=namespace, readable=readable, network="none"),
                                   audit_log)  # fmt: skip


__all__ = ["WRITE_ROOTS", "OpenAIAgent"]
