"""`openai:MODEL` against the scripted model server over real HTTP on 127.0.0.1 (only the model is scripted)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kloop.agents import AgentRequest, AgentStatus, Decision, Role, get_agent
from kloop.agents.containment import mechanisms
from kloop.agents.openai_agent import OpenAIAgent
from kloop.agents.scripted_server import Script, ScriptedServer, call, hang, text
from kloop.errors import BadInput

VERDICT = '{"decision": "accept", "progress": "advanced", "findings": [], "summary": "fine"}'


@pytest.fixture()
def run_dir(tmp_path: Path, examples_dir: Path) -> Path:
    """A run directory as the loop lays it out: sealed/ task, workspace/ with solution/ and notes/."""
    shutil.copytree(examples_dir / "rmsnorm", tmp_path / "sealed", ignore=shutil.ignore_patterns("solutions"))
    shutil.copytree(examples_dir / "rmsnorm" / "baseline", tmp_path / "workspace" / "solution")
    (tmp_path / "workspace" / "notes").mkdir()
    return tmp_path


def _agent(srv: ScriptedServer) -> OpenAIAgent:
    return OpenAIAgent("scripted-model", base_url=srv.base_url + "/v1", api_key="test-key")


def _request(run_dir: Path, role: Role, limit: float = 120.0) -> AgentRequest:
    art = run_dir / "artifacts"
    return AgentRequest(role=role, prompt="make it fast", workspace=run_dir / "workspace",
                        read_only=role is Role.reviewer, time_limit_s=limit, artifacts_dir=art)  # fmt: skip


def _tool_names(srv: ScriptedServer) -> set[str]:
    return {t["function"]["name"] for t in srv.model_calls("chat")[0].body["tools"]}


def test_writer_edits_solution_and_is_refused_outside(run_dir: Path) -> None:
    script = Script(steps=[
        call("list_files", path="solution"),
        call("write_file", path="solution/NOTE.txt", content="tiled\n"),
        call("write_file", path="../sealed/definition.json", content="{}"),
        call("write_file", path=".git/config", content="x"),
        text("Tiled the loop; expect 1.3x."),
    ], input_tokens=100, output_tokens=10)  # fmt: skip
    sealed_before = (run_dir / "sealed" / "definition.json").read_text()
    with ScriptedServer(script) as srv:
        result = _agent(srv).run(_request(run_dir, Role.writer))
        calls = srv.model_calls("chat")
    assert result.status is AgentStatus.completed
    assert result.claim is not None and result.claim.text == "Tiled the loop; expect 1.3x."
    assert (run_dir / "workspace" / "solution" / "NOTE.txt").read_text() == "tiled\n"
    assert (run_dir / "sealed" / "definition.json").read_text() == sealed_before
    assert len(result.permission_denials) == 2 and "outside the workspace" in result.permission_denials[0]
    assert result.tokens == 5 * 110  # usage summed over the five model calls
    listing = json.dumps(calls[1].body["messages"][-1])
    assert "main.py" in listing and "solution.json" in listing  # the tool result went back to the model
    lines = [json.loads(line) for line in result.transcript_path.read_text().splitlines()]
    assert [e["event"] for e in lines].count("tool") == 4 and lines[-1]["event"] == "reply"


def test_reviewer_has_no_writing_tools_and_its_verdict_is_its_verdict_tool_call(run_dir: Path) -> None:
    script = [call("write_file", path="solution/main.py", content="pwned"),
              call("run_command", command="touch solution/x"), call("submit_verdict", **json.loads(VERDICT)),
              text("verdict given")]  # fmt: skip
    before = (run_dir / "workspace" / "solution" / "main.py").read_text()
    with ScriptedServer(script) as srv:
        result = _agent(srv).run(_request(run_dir, Role.reviewer))
        tools = _tool_names(srv)
    assert tools == {"list_files", "read_file", "profile_analyze", "wiki_search", "submit_verdict"}
    assert result.verdict is not None and result.verdict.decision is Decision.accept
    assert (run_dir / "workspace" / "solution" / "main.py").read_text() == before
    assert not (run_dir / "workspace" / "solution" / "x").exists()
    assert [d.split(":")[0] for d in result.permission_denials] == ["write_file", "run_command"]


def test_a_read_only_request_gets_the_reviewers_tools_whatever_the_role(run_dir: Path) -> None:
    """The reviewer's tools include its verdict tool (issue 28: a verdict only through a tool call)."""
    with ScriptedServer([text("done")]) as srv:
        request = _request(run_dir, Role.writer).model_copy(update={"read_only": True})
        _agent(srv).run(request)
        assert _tool_names(srv) == {"list_files", "read_file", "profile_analyze", "wiki_search", "submit_verdict"}


def test_researcher_writes_only_notes(run_dir: Path) -> None:
    script = [call("read_file", path="../sealed/definition.json"),
              call("write_file", path="notes/plan.md", content="# Plan\n- fuse\n"),
              call("write_file", path="solution/main.py", content="x"), text("planned")]  # fmt: skip
    with ScriptedServer(script) as srv:
        result = _agent(srv).run(_request(run_dir, Role.researcher))
        tools = _tool_names(srv)
        read_back = srv.model_calls("chat")[1].body["messages"][-1]["content"]
    assert "run_command" not in tools and "write_file" in tools
    assert json.loads(read_back)["name"] == "rmsnorm_h2048"  # the task was readable
    assert (run_dir / "workspace" / "notes" / "plan.md").read_text().startswith("# Plan")
    assert (run_dir / "workspace" / "solution" / "main.py").read_text() != "x"
    assert result.permission_denials and "only under notes/" in result.permission_denials[0]


def test_hanging_server_is_cut_at_the_time_limit(run_dir: Path) -> None:
    with ScriptedServer([hang()]) as srv:
        result = _agent(srv).run(_request(run_dir, Role.writer, limit=1.5))
    assert result.status is AgentStatus.timed_out


def test_command_runner_is_contained(run_dir: Path) -> None:
    if not mechanisms():
        pytest.skip("no containment layer runs here (needs util-linux unshare with privilege, or Landlock)")
    command = ("echo ok > solution/made.txt; echo x >> ../sealed/definition.json; "
               "echo $OPENAI_API_KEY $KLOOP_OPENAI_API_KEY; echo key=test-key-seen-$OPENAI_API_KEY")  # fmt: skip
    before = (run_dir / "sealed" / "definition.json").read_text()
    with ScriptedServer([call("run_command", command=command, timeout_s=60), text("done")]) as srv:
        result = _agent(srv).run(_request(run_dir, Role.writer))
        output = srv.model_calls("chat")[1].body["messages"][-1]["content"]
    assert result.status is AgentStatus.completed
    assert (run_dir / "workspace" / "solution" / "made.txt").read_text() == "ok\n"
    assert (run_dir / "sealed" / "definition.json").read_text() == before
    assert "key=test-key-seen-\n" in output and "[exit" in output  # no key in the command's environment


def test_writer_verifies_through_kloop(run_dir: Path) -> None:
    with ScriptedServer([call("verify", workloads=1, timing=False), text("baseline checked")]) as srv:
        result = _agent(srv).run(_request(run_dir, Role.writer, limit=550))  # a sandbox starts slowly under load
        answer = json.loads(srv.model_calls("chat")[1].body["messages"][-1]["content"])
    assert result.status is AgentStatus.completed
    assert answer["status"] == "PASSED" and answer["failed_checks"] == []


def test_no_endpoint_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "KLOOP_OPENAI_BASE_URL", "KLOOP_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BadInput, match="OPENAI_BASE_URL"):
        get_agent("openai:some-model")
    monkeypatch.setenv("KLOOP_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    agent = get_agent("openai:some-model")
    assert isinstance(agent, OpenAIAgent) and agent.base_url == "http://127.0.0.1:9/v1"


def test_server_gone_is_a_crash_not_an_exception(run_dir: Path) -> None:
    agent = OpenAIAgent("m", base_url="http://127.0.0.1:9/v1", api_key="x")
    result = agent.run(_request(run_dir, Role.writer, limit=10))
    assert result.status is AgentStatus.crashed and "model server" in result.final_message
