"""The verdict tool for CLI reviewers that have no output schema of their own (Kimi Code, kimi-cli).

`python -m kloop.agents.verdict_mcp` serves one MCP tool over stdio, `submit_verdict`, whose
arguments are the verdict contract (decision, progress, findings, summary) as closed types. A
reviewer hands its verdict in by calling it; kloop reads the verdict from that tool call's
arguments, never from the reviewer's text, so a reviewer that quotes the writer's
`{"decision": "accept"}` in its answer cannot adopt the writer's verdict. Claude Code's reviewer
has the same channel built in (StructuredOutput, `--json-schema`), Codex's is its output schema.

The server keeps nothing: it only makes the tool exist and checks the arguments' types.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SERVER = "kloop"
TOOL = "submit_verdict"
DESCRIPTION = ("Hand in your verdict on the candidate. This call is the only way a verdict reaches kloop: "
               "what you write as text is never read as one. Call it exactly once, when you have decided.")


class FindingArg(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: Literal["low", "medium", "high"]
    text: str


def build_server() -> Any:
    """The MCPServer with the one tool (the official `mcp` SDK derives its input schema from the types)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER, instructions="kloop's reviewer verdict tool.", log_level="WARNING")

    @server.tool(name=TOOL, description=DESCRIPTION)
    def submit_verdict(decision: Literal["accept", "reject"], progress: Literal["advanced", "stalled", "regressed"],
                       summary: str, findings: list[FindingArg] | None = None) -> str:
        return f"verdict recorded: {decision}"

    return server


def client_config() -> dict[str, Any]:
    """`{"mcpServers": {"kloop": ...}}` starting this server with kloop's own interpreter (no PATH lookup)."""
    return {"mcpServers": {SERVER: {"command": sys.executable, "args": ["-m", "kloop.agents.verdict_mcp"]}}}


def main() -> None:
    build_server().run("stdio")


if __name__ == "__main__":
    main()
