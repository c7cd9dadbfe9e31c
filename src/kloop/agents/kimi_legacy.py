"""The legacy PyPI `kimi-cli` (1.50.0, Python >= 3.13) as writer, researcher or reviewer.

Same conventions as Kimi Code (`kloop.agents.kimi`): print mode approves every tool, so the writer
runs inside kloop's containment; the reviewer's agent file keeps only ReadFile, Glob and Grep, so a
WriteFile or Shell call is "Tool `WriteFile` not found", and kloop's verdict tool (`submit_verdict`,
from `--mcp-config-file`) is its only verdict channel. Later PyPI releases (1.51, 1.52) are
shutdown stubs, and 1.50.0 crashes on Python 3.12.1, hence the pin and the interpreter floor.
Setup installs it into `.tools/kimi-legacy` only where such a Python exists.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kloop.agents import verdict_mcp
from kloop.agents.base import AgentRequest
from kloop.agents.cli_process import (
    Endpoint,
    Invocation,
    agent_env,
    pointer_prompt,
    prompt_file,
    read_only_role,
    tools_prefix,
)
from kloop.agents.kimi import KimiAgent

REVIEWER_AGENT = """version: 1
agent:
  extend: default
  name: kloop-reviewer
  tools:
    - "kimi_cli.tools.file:ReadFile"
    - "kimi_cli.tools.file:Glob"
    - "kimi_cli.tools.file:Grep"
  subagents: {}
"""


class LegacyKimiAgent(KimiAgent):
    name = "kimi-legacy"
    verdict_tool = verdict_mcp.TOOL  # kimi-cli names an MCP tool by its own name

    def __init__(self, endpoint: Endpoint | None = None, program: Path | None = None) -> None:
        super().__init__(endpoint or Endpoint.from_env("kimi"), program)  # shares KLOOP_KIMI_*

    def program_argv(self) -> list[str] | None:
        explicit = self.program or os.environ.get("KLOOP_KIMI_LEGACY_BIN")
        exe = Path(explicit) if explicit else tools_prefix() / "kimi-legacy" / "bin" / "kimi"
        return [str(exe)] if exe.exists() else None

    def config_toml(self) -> str:
        return super().config_toml().replace('type = "openai"', 'type = "openai_legacy"')

    def invocation(self, request: AgentRequest, home: Path) -> Invocation:
        config = home / "kimi-config.toml"
        config.write_text(self.config_toml(), encoding="utf-8")
        long_prompt = prompt_file(request, home)
        prompt = pointer_prompt(long_prompt) if long_prompt else request.prompt
        argv = [*self.require_program(), "--print", "--output-format", "stream-json", "--config-file", str(config),
                "-w", str(request.workspace), "-p", prompt]
        if read_only_role(request):
            agent_file = home / "kloop-reviewer.yaml"
            agent_file.write_text(REVIEWER_AGENT, encoding="utf-8")
            mcp = home / "verdict-mcp.json"  # the verdict tool (kloop.agents.verdict_mcp)
            mcp.write_text(json.dumps(verdict_mcp.client_config()), encoding="utf-8")
            argv += ["--agent-file", str(agent_file), "--mcp-config-file", str(mcp)]
        return Invocation(argv=argv, env=agent_env(home), contained=not read_only_role(request))

