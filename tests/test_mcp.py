"""`kloop mcp` through the official SDK's own stdio client: a real subprocess speaking MCP."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import EXAMPLES

mcp = pytest.importorskip("mcp")


def _server(tmp_path: Path):
    from mcp import StdioServerParameters

    code = "import sys; from kloop.cli import main; sys.exit(main(['mcp', '--db', sys.argv[1]]))"
    return StdioServerParameters(command=sys.executable, args=["-c", code, str(tmp_path / "wiki.sqlite")],
                                 env={"KLOOP_HOME": str(tmp_path / "home")})  # fmt: skip


async def _session(tmp_path: Path, calls: list[tuple[str, dict]]) -> tuple[list[str], list]:
    from mcp import Client

    async with Client(_server(tmp_path)) as client:
        tools = await client.list_tools()
        results = [await client.call_tool(name, args) for name, args in calls]
    return sorted(t.name for t in tools.tools), results


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def test_tools_wiki_and_errors_over_stdio(tmp_path: Path) -> None:
    calls = [
        ("wiki_search", {"query": "shared memory bank conflicts", "k": 3}),
        ("wiki_show", {"entry_id": "card/no-such-card"}),
        ("verify", {"task": str(tmp_path / "missing-task"), "solution": str(tmp_path)}),
    ]
    names, (search, show, verify) = anyio.run(_session, tmp_path, calls)
    assert names == ["profile_analyze", "verify", "wiki_search", "wiki_show"]
    assert not search.is_error and "card/" in _text(search) and "untrusted-upstream-text" in _text(search)
    assert show.is_error and "no such wiki entry" in _text(show)
    assert verify.is_error and "missing-task" in _text(verify)  # kloop's one-line BadInput, not a crash


def test_verify_and_profile_over_stdio(tmp_path: Path, shared_fixtures: Path) -> None:
    reports = sorted((shared_fixtures / "ncu").rglob("details.csv"))  # a real ncu --csv export (fast to read)
    if not reports:
        pytest.skip("no ncu details.csv fixture in ../shared/fixtures/ncu")
    task = tmp_path / "task"
    shutil.copytree(EXAMPLES / "rmsnorm", task, ignore=shutil.ignore_patterns("solutions"))
    calls = [
        ("verify", {"task": str(task), "solution": str(task / "baseline"), "workloads": 1, "timing": False}),
        ("profile_analyze", {"report": str(reports[0])}),
    ]
    _, (verify, profile) = anyio.run(_session, tmp_path, calls)
    assert not verify.is_error and '"status": "PASSED"' in _text(verify)
    assert not profile.is_error and "next edit" in _text(profile).lower()


def _claude() -> Path | None:
    from kloop.agents.cli_process import find_program

    found = find_program("claude", "KLOOP_CLAUDE_BIN")
    return Path(found) if found else None


@pytest.mark.skipif(_claude() is None, reason="claude CLI missing: run scripts/agent-clis.sh (setup does)")
def test_claude_code_sees_the_skills_and_calls_kloop_over_mcp(tmp_path: Path) -> None:
    """A real agent: Claude Code finds the installed skills and uses `kloop mcp` (only the model is scripted)."""
    import json
    import os
    import subprocess

    from kloop.agents.scripted_server import ScriptedServer, call, text
    from kloop.mcp import client_config
    from kloop.skills import install

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    install("claude", ws)
    config = client_config(env={"KLOOP_HOME": str(home / "kloop")}, wiki_db=tmp_path / "wiki.sqlite")
    steps = [call("WaitForMcpServers"), call("mcp__kloop__wiki_search", query="lds bank conflicts", k=2), text("ok")]
    with ScriptedServer(steps) as srv:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "ANTHROPIC_BASE_URL": srv.base_url,
               "ANTHROPIC_API_KEY": "scripted", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}  # fmt: skip
        argv = [str(_claude()), "-p", "look up LDS bank conflicts", "--output-format", "stream-json", "--verbose",
                "--no-session-persistence", "--mcp-config", json.dumps(config), "--strict-mcp-config",
                "--allowedTools", "mcp__kloop__wiki_search"]  # fmt: skip
        subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        calls = srv.model_calls("anthropic")
    assert calls, "Claude Code never called the scripted model"
    first = json.dumps(calls[0].body)
    assert all(name in first for name in ("kloop-verify", "kloop-profile", "kloop-wiki", "kloop-loop"))
    results = [part for m in calls[-1].body["messages"] if isinstance(m.get("content"), list)
               for part in m["content"] if part.get("type") == "tool_result"]  # fmt: skip
    wiki = json.dumps(results[-1])
    assert "card/" in wiki and "untrusted-upstream-text" in wiki, wiki[:500]
