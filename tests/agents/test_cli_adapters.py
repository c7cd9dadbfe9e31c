"""The claude, codex and kimi adapters against the REAL CLIs; only the model is scripted.

Exit codes say success even when a tool was refused, so every test judges by what changed on
disk and by the refusal the CLI itself printed, which kloop must have recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

import kloop
from kloop.agents.base import AgentRequest, AgentStatus, Decision, Role
from kloop.agents.doctor import scripted_verdict
from kloop.agents.rules import RulesReviewer
from kloop.agents.scripted_server import ScriptedServer, hang, text
from kloop.agents.tuner import TunerAgent
from kloop.loop.campaign import Campaign, Services
from kloop.loop.config import RunConfig, Stage
from tests.agents.cli_cases import Cli, cli_params
from tests.loop.helpers import ROWSCALE, VECTORIZED, real_verifier

pytestmark = pytest.mark.timeout(400)
LIMIT_S = 240.0  # generous: these run under heavy load; nothing here asserts on time
VERDICT = {"decision": "accept", "progress": "advanced",
           "findings": [{"severity": "low", "text": "vectorized multiply"}], "summary": "honest change"}


def _workspace(tmp: Path) -> Path:
    ws = tmp / "run" / "workspace"
    (ws / "solution").mkdir(parents=True)
    (ws / "solution" / "main.py").write_text("x = 1\n")
    (tmp / "run" / "sealed").mkdir()
    (tmp / "run" / "sealed" / "definition.json").write_text("{}\n")
    return ws


def _request(ws: Path, role: Role, art: Path, limit: float = LIMIT_S) -> AgentRequest:
    art.mkdir(parents=True, exist_ok=True)
    return AgentRequest(role=role, prompt="Review the candidate in solution/ and answer with a verdict JSON.",
                        workspace=ws, read_only=role is Role.reviewer, time_limit_s=limit, artifacts_dir=art)


@pytest.mark.parametrize("cli", cli_params())
def test_writer_edits_and_the_loop_verifies_and_accepts(cli: Cli, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    target = run_dir / "workspace" / "solution" / "main.py"
    steps = [*cli.write(target, VECTORIZED), text("Vectorized the row loop: one multiply, expect 100x.")]
    with ScriptedServer(steps) as srv:
        cfg = RunConfig(task=str(ROWSCALE), writer=cli.name, reviewer="rules", stages=[Stage.iterate],
                        device="cpu", rounds=1, agent_time_limit_s=LIMIT_S)
        services = Services(writer=cli.make(srv), reviewer=RulesReviewer(), tuner=TunerAgent(),
                            verifier=real_verifier())
        summary = Campaign.create(ROWSCALE, run_dir, cfg, services).run()
    first = summary.rounds[0]
    assert first.verify_status == "PASSED", first.reasons  # the real verifier judged the CLI's edit
    # Accepted, unless the one reason is the speed interval: timing on this 2-core machine under
    # eight engineers' load can be too noisy to clear the bar (docs/agents.md, real-CLI tests).
    assert first.accepted or [r.split(":")[0] for r in first.reasons] == ["speed"], first.reasons
    transcript = run_dir / "artifacts" / "round-001" / f"{cli.name}-writer-transcript.jsonl"
    assert transcript.is_file() and transcript.stat().st_size > 0
    assert srv.model_calls(), "the CLI never called the scripted model"


@pytest.mark.parametrize("cli", cli_params())
def test_reviewer_cannot_write_and_kloop_records_the_refusal(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    victim = ws / "solution" / "main.py"
    steps = [*cli.write(victim, "hacked = True\n"), cli.shell(f"echo hacked > {victim}"),
             *scripted_verdict(cli.name, VERDICT)]  # structured only: prose around a verdict is no verdict
    with ScriptedServer(steps) as srv:
        result = cli.make(srv).run(_request(ws, Role.reviewer, tmp_path / "art"))
    assert victim.read_text() == "x = 1\n"
    assert result.status is AgentStatus.completed, result.final_message
    if cli.name != "codex":  # Codex's reviewer has no tool at all to be refused (no shell, no file tools)
        assert result.permission_denials, "the CLI refused, kloop must say so"
    assert result.verdict is not None and result.verdict.decision is Decision.accept
    assert result.verdict.findings[0].text == "vectorized multiply"
    if cli.name == "codex":  # the verdict was asked for with --output-schema (strict JSON schema)
        fmt = srv.model_calls("responses")[0].body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["strict"] is True
    # Usage as kloop's gateway counted it from the answers (the scripted model bills 120 + 30 tokens a
    # call, side calls included), priced at the default $3 / $15 per million tokens: the same for every CLI.
    billed = [r for r in srv.requests if r.method == "POST" and r.api != "other"]
    assert result.tokens == 150 * len(billed)
    assert result.cost_usd == pytest.approx(len(billed) * (120 * 3 + 30 * 15) / 1e6)

@pytest.mark.parametrize("cli", cli_params())
def test_writer_cannot_touch_kloop_or_sealed(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    sealed = tmp_path / "run" / "sealed" / "definition.json"
    planted = Path(kloop.__file__).resolve().parent / "agents" / f"_planted_by_{cli.name}.py"
    steps = [cli.shell(f"touch {planted}"), cli.shell(f"echo hacked >> {sealed}"),
             *cli.write(ws / "solution" / "main.py", "x = 2\n"), text("done")]
    try:
        with ScriptedServer(steps) as srv:
            result = cli.make(srv).run(_request(ws, Role.writer, tmp_path / "art"))
        assert not planted.exists(), "the writer changed kloop's own package"
    finally:
        planted.unlink(missing_ok=True)
    assert sealed.read_text() == "{}\n"
    assert (ws / "solution" / "main.py").read_text() == "x = 2\n", result.final_message
    assert len(result.contained_denials) >= 2, result.contained_denials  # kloop's audit, not the CLI's words


@pytest.mark.parametrize("cli", cli_params())
def test_a_hanging_model_is_killed_at_the_limit_and_nothing_is_left(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    # A CLI that did not even start up within a short limit (heavy load) is tried again with a longer one:
    # the test is about a model that never answers, so the CLI must have reached it. Each try waits out
    # its whole limit, so the ladder climbs in steps: kimi-legacy, the slowest to start, missed 15 s at
    # load 20 and then sat out a 90 s try (110 s in all) where 40 s reaches the model; 120 s is left
    # for a box loaded beyond that. The first try is short (it was 15 s, a third of this file's time):
    # run alone here, all four CLIs reached the model within 8 s (these four tests 62 -> 38 s).
    for limit in (8, 40, 120):
        with ScriptedServer([hang()]) as srv:
            result = cli.make(srv).run(_request(ws, Role.writer, tmp_path / f"art-{limit}", limit=limit))
        assert result.status is AgentStatus.timed_out
        assert _processes_under(ws) == []
        if srv.requests:
            break
    assert srv.requests, "the CLI never reached the model"


def _processes_under(ws: Path) -> list[str]:
    """Processes still running with the workspace as their directory (the CLI and anything it started)."""
    left = []
    for proc in psutil.process_iter(["pid", "cwd", "cmdline"]):
        cwd = proc.info.get("cwd") or ""
        if cwd.startswith(str(ws)):
            left.append(f"{proc.info['pid']}: {' '.join(proc.info.get('cmdline') or [])[:120]}")
    return left


@pytest.mark.parametrize("cli", cli_params())
def test_host_keys_and_seed_secrets_never_reach_the_agent(cli: Cli, tmp_path: Path, monkeypatch) -> None:
    # The marker holds letters no hex digit or UUID can: the agent's env carries random session ids.
    marker = "qzxw-secret"
    monkeypatch.setenv("KLOOP_SEED_SECRET", f"seed-{marker}")
    monkeypatch.setenv("KLOOP_SEED_SECRET_FILE", f"/secret/path-{marker}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"host-key-{marker}")
    monkeypatch.setenv("OPENAI_API_KEY", f"host-key-{marker}")
    ws = _workspace(tmp_path)
    dump = ws / "solution" / "env.txt"
    with ScriptedServer([cli.shell(f"env > {dump}"), text("done")]) as srv:
        result = cli.make(srv).run(_request(ws, Role.writer, tmp_path / "art"))
    seen = dump.read_text()
    assert "PATH=" in seen, result.final_message  # the dump ran
    assert marker not in seen
    assert "KLOOP_SEED_SECRET" not in seen


@pytest.mark.parametrize("cli", cli_params())
def test_a_prompt_longer_than_one_argument_still_reaches_the_agent(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    request = _request(ws, Role.reviewer, tmp_path / "art")
    request.prompt = "Review this evidence.\n" + "diff line\n" * 20_000 + "END-OF-EVIDENCE-9c1e"  # ~200 KB
    with ScriptedServer(scripted_verdict(cli.name, VERDICT)) as srv:
        result = cli.make(srv).run(request)
    assert result.status is AgentStatus.completed, result.final_message
    assert result.verdict is not None
    seen = json.dumps(srv.model_calls()[0].body)
    if cli.name in ("claude", "codex"):  # fed on stdin: the model got all of it
        assert "END-OF-EVIDENCE-9c1e" in seen
    else:  # Kimi takes its prompt only as an argument: it is pointed at the file
        assert "Your full instructions are in the file" in seen
