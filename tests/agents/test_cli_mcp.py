"""kloop's MCP server from a real agent: a contained Claude Code / Kimi Code writer calls `wiki_search`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.agents.base import AgentRequest, AgentStatus, Role
from kloop.agents.scripted_server import ScriptedServer, call, text
from tests.agents.cli_cases import CLIS, Cli

pytestmark = pytest.mark.timeout(400)
MCP_CLIS = [pytest.param(c, id=c.name, marks=pytest.mark.skipif(not c.installed(), reason=f"{c.name} CLI missing"))
            for c in CLIS if c.name in ("claude", "kimi")]


@pytest.mark.parametrize("cli", MCP_CLIS)
def test_a_writer_reaches_kloops_wiki_through_mcp(cli: Cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KLOOP_HOME", str(tmp_path / "kloop-home"))  # no wiki yet: the server seeds its own
    ws = tmp_path / "workspace"
    (ws / "solution").mkdir(parents=True)
    steps = [call("mcp__kloop__wiki_search", query="shared memory bank conflict"), text("searched")]
    with ScriptedServer(steps) as srv:
        request = AgentRequest(role=Role.writer, prompt="search the wiki", workspace=ws, time_limit_s=240,
                               artifacts_dir=tmp_path / "art")
        result = cli.make(srv).run(request)
    assert result.status is AgentStatus.completed, result.final_message
    answer = srv.model_calls()[-1].body
    assert "KernelWiki results" in str(answer["messages"]), "the tool result never reached the model"
    assert "bank" in str(answer["messages"]).lower()
