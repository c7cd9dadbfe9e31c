"""Claude Code headless (`claude -p ... --output-format stream-json`) as writer, researcher or reviewer.

Writer: edits through Read/Write/Edit and runs commands through Bash, with `acceptEdits`, inside
kloop's containment (Claude Code's own rules only stop writes outside its working directory, and
the working directory is the workspace). Reviewer: only Read, Grep and Glob exist for it
(`--tools`), so a Write is "No such tool available"; its verdict comes only from the StructuredOutput
tool that `--json-schema` gives it (`result.structured_output`), never from its text. A denied tool still exits 0: denials are read
from `result.permission_denials` and from tool results that read as refusals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kloop.agents.base import AgentRequest, AgentResult
from kloop.agents.cli_process import (
    CliAgent,
    CliOutcome,
    Invocation,
    agent_env,
    denials_in,
    find_program,
    finish,
    kloop_mcp_config,
    prompt_file,
    read_only_role,
)

WRITER_TOOLS = "Read,Write,Edit,Bash,Grep,Glob"
REVIEWER_TOOLS = "Read,Grep,Glob"


class ClaudeAgent(CliAgent):
    name = "claude"
    default_base_url = "https://api.anthropic.com"

    def program_argv(self) -> list[str] | None:
        exe = self.program or find_program("claude", "KLOOP_CLAUDE_BIN")
        return [str(exe)] if exe else None

    def invocation(self, request: AgentRequest, home: Path) -> Invocation:
        reviewer = read_only_role(request)
        long_prompt = prompt_file(request, home)  # `claude -p` reads the prompt from stdin without one
        argv = [*self.require_program(), "-p", *([] if long_prompt else [request.prompt]),
                "--output-format", "stream-json", "--verbose", "--no-session-persistence"]
        if reviewer:  # the verdict only through Claude Code's StructuredOutput tool (--json-schema)
            from kloop.agents.codex import verdict_schema

            argv += ["--tools", REVIEWER_TOOLS, "--permission-mode", "default",
                     "--json-schema", json.dumps(verdict_schema())]
        else:
            allowed = WRITER_TOOLS
            mcp = kloop_mcp_config()
            if mcp is not None:  # kloop's verify / profile / wiki tools, as mcp__kloop__*
                (home / "mcp.json").write_text(json.dumps(mcp), encoding="utf-8")
                argv += ["--mcp-config", str(home / "mcp.json"), "--strict-mcp-config"]
                allowed += ",mcp__kloop"
            # Claude Code's own permission rules off: every write reaches the kernel, where kloop's
            # containment decides and its audit sees the refusal (one judge for every channel).
            argv += ["--tools", WRITER_TOOLS, "--allowedTools", allowed, "--permission-mode", "bypassPermissions"]
        if self.endpoint.model:
            argv += ["--model", self.endpoint.model]
        # No `--max-budget-usd`: the budget is the gateway's (kloop's prices, kloop's count, outside the
        # agent); Claude Code's own check prices every model as Claude and stopped calls the gateway allows.
        extra = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                 "MCP_CONNECTION_NONBLOCKING": "0",  # wait for kloop's MCP server before the first turn
                 "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                 "IS_SANDBOX": "1"}  # it is: kloop's containment (bypassPermissions is refused to root without it)
        if self.endpoint.base_url:
            extra["ANTHROPIC_BASE_URL"] = self.endpoint.base_url
        if self.endpoint.api_key:
            extra["ANTHROPIC_API_KEY"] = self.endpoint.api_key
        return Invocation(argv=argv, env=agent_env(home, extra), contained=True, stdin=long_prompt)

    def interpret(self, request: AgentRequest, outcome: CliOutcome, inv: Invocation, home: Path) -> AgentResult:
        result = next((e for e in reversed(outcome.events) if e.get("type") == "result"), None)
        denials = [_denial_line(d) for d in (result or {}).get("permission_denials") or []]
        denials += denials_in(_tool_results(outcome.events), "claude")
        if result is None:
            return finish(request, outcome, "", ok=False, tokens=None, cost=None, denials=denials)
        usage = result.get("usage") or {}
        tokens = sum(int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens",
                                                       "cache_creation_input_tokens", "cache_read_input_tokens"))
        ok = result.get("subtype") == "success" and not result.get("is_error")
        final = str(result.get("result") or "")
        if not ok and not final:
            final = f"claude: {result.get('subtype', 'error')}"
        cost = result.get("total_cost_usd")
        structured = None
        if read_only_role(request):  # no structured output, no verdict: the final text is never read for one
            given = result.get("structured_output")
            structured = json.dumps(given) if isinstance(given, dict) else "no structured output"
        return finish(request, outcome, final, ok=ok, tokens=tokens or None,
                      cost=float(cost) if cost is not None else None, denials=denials, structured=structured)


def _denial_line(denial: dict[str, Any]) -> str:
    tool_input = denial.get("tool_input") or {}
    target = tool_input.get("file_path") or tool_input.get("command") or json.dumps(tool_input)[:120]
    return f"claude: {denial.get('tool_name', 'tool')} denied: {target}"


def _tool_results(events: list[dict[str, Any]]) -> list[str]:
    """The text of every tool result Claude Code fed back to the model."""
    texts: list[str] = []
    for event in events:
        if event.get("type") != "user":
            continue
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                body = block.get("content")
                if isinstance(body, list):
                    body = "\n".join(str(b.get("text", "")) for b in body if isinstance(b, dict))
                texts.append(str(body or ""))
    return texts
