"""The model gateway against real clients (the official OpenAI SDK) and the scripted server upstream."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from openai import AuthenticationError, OpenAI, PermissionDeniedError

from kloop.agents.base import AgentRequest, AgentStatus, Role
from kloop.agents.gateway import Gateway
from kloop.agents.openai_agent import OpenAIAgent
from kloop.agents.scripted_server import ScriptedServer, text, trickle
from kloop.loop.services import call_agent

pytestmark = pytest.mark.timeout(120)
ASK = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def test_the_call_token_is_swapped_for_the_real_key_and_a_stranger_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "gw.jsonl"
    with ScriptedServer([text("hi")]) as srv, Gateway(srv.base_url + "/v1", "sk-real-1", log_path=log) as gw:
        answer = OpenAI(base_url=gw.client_url, api_key=gw.token, max_retries=0).chat.completions.create(**ASK)
        with pytest.raises(AuthenticationError):
            OpenAI(base_url=gw.client_url, api_key="sk-real-1", max_retries=0).chat.completions.create(**ASK)
    assert answer.choices[0].message.content == "hi"
    assert [r.credential for r in srv.model_calls()] == ["sk-real-1"]  # the stranger never got upstream
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["status"] for e in entries] == [200, 401]
    assert entries[0]["input_tokens"] == 120 and entries[0]["output_tokens"] == 30 and not entries[0]["estimated"]


def test_token_and_dollar_budgets_refuse_the_next_request(tmp_path: Path) -> None:
    with ScriptedServer([text("a"), text("b"), text("c")]) as srv:
        for limits in ({"token_limit": 200}, {"usd_limit": 0.001}):  # one call costs 150 tokens, $0.00081
            with Gateway(srv.base_url + "/v1", None, **limits) as gw:
                client = OpenAI(base_url=gw.client_url, api_key=gw.token, max_retries=0)
                client.chat.completions.create(**ASK)
                client.chat.completions.create(**ASK)  # under budget before it: allowed, spends past it
                with pytest.raises(PermissionDeniedError, match="budget spent"):
                    client.chat.completions.create(**ASK)
            assert gw.account.refused == 1 and gw.tokens == 300


def test_a_trickling_model_is_cut_at_the_deadline_and_the_worker_thread_ends(tmp_path: Path) -> None:
    """A server that sends a keep-alive byte every second: only a total deadline ends the call."""
    ws = tmp_path / "workspace"
    (ws / "solution").mkdir(parents=True)
    with ScriptedServer([trickle()]) as srv:
        agent = OpenAIAgent("m", base_url=srv.base_url + "/v1", api_key="k")
        # 10 s: the gateway's deadline is 10 s less the CLI's and the close margins (6.5 s), past six keep-alive bytes
        request = AgentRequest(role=Role.writer, prompt="go", workspace=ws, time_limit_s=10, artifacts_dir=tmp_path)
        started = time.monotonic()
        result = call_agent(agent, request)
        took = time.monotonic() - started
        # The server notices the hang-up only when a keep-alive write fails: the first write after the
        # close still lands in the socket's buffer (the peer answers it with a reset), so up to two
        # keep-alive seconds, more on a loaded machine. An upstream never closed stays at 0.
        until = time.monotonic() + 8.0
        while srv.trickles_cut == 0 and time.monotonic() < until:
            time.sleep(0.1)
        cut = srv.trickles_cut
    assert result.status is AgentStatus.timed_out, result.final_message
    assert "deadline" in result.final_message  # ended by the gateway's cut, not abandoned by the loop
    assert took < 10.0  # the agent's own deadline is 10 s less its margins: it returned first
    assert cut == 1
    assert not [t for t in threading.enumerate() if t.name == "agent-writer"]
