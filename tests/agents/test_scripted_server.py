"""The scripted model server against real clients: the official openai SDK and raw HTTP."""

from __future__ import annotations

import json
import urllib.request

import pytest

from kloop.agents.scripted_server import Script, ScriptedServer, call, hang, text

openai = pytest.importorskip("openai")


def _client(srv: ScriptedServer):
    return openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0, timeout=30)


def test_chat_completions_stream_follows_the_conversation():
    steps = [call("write", path="a.txt", content="hi"), text("all done")]
    with ScriptedServer(steps) as srv:
        client = _client(srv)
        messages = [{"role": "user", "content": "go"}]
        stream = client.chat.completions.create(model="m", messages=messages, stream=True,
                                                stream_options={"include_usage": True},
                                                tools=[{"type": "function", "function": {"name": "write"}}])
        chunks = list(stream)
        calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
        assert calls[0].function.name == "write"
        assert json.loads(calls[0].function.arguments) == {"path": "a.txt", "content": "hi"}
        assert chunks[-1].usage.total_tokens == 150
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": calls[0].id, "type": "function", "function": {"name": "write", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": calls[0].id, "content": "ok"}]
        reply = client.chat.completions.create(model="m", messages=messages)
        assert reply.choices[0].message.content == "all done"
        assert reply.choices[0].finish_reason == "stop"
        # Past the end of the script the model says the final line.
        messages += [{"role": "assistant", "content": "all done"}, {"role": "user", "content": "more"}]
        assert client.chat.completions.create(model="m", messages=messages).choices[0].message.content == "done"
    assert [r.step for r in srv.model_calls("chat")] == [0, 1, 2]


def test_responses_stream_carries_function_calls_and_usage():
    with ScriptedServer([call("exec_command", cmd="ls"), text('{"decision": "accept"}')]) as srv:
        client = _client(srv)
        events = list(client.responses.create(model="m", input="go", stream=True))
        done = [e for e in events if e.type == "response.completed"][0]
        item = done.response.output[0]
        assert item.type == "function_call" and item.name == "exec_command"
        assert json.loads(item.arguments) == {"cmd": "ls"}
        assert done.response.usage.output_tokens == 30
        second = client.responses.create(model="m", input=[
            {"type": "message", "role": "user", "content": "go"},
            {"type": "function_call", "call_id": item.call_id, "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": item.call_id, "output": "a.txt"}])
        assert second.output_text == '{"decision": "accept"}'


def _post(url: str, body: dict) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def test_anthropic_messages_sse_and_head_probe():
    with ScriptedServer([call("Write", file_path="/w/x", content="y")]) as srv:
        head = urllib.request.Request(srv.base_url + "/", method="HEAD")
        assert urllib.request.urlopen(head, timeout=30).status == 200
        raw = _post(srv.base_url + "/v1/messages?beta=true", {
            "model": "claude-x", "stream": True, "tools": [{"name": "Write"}],
            "messages": [{"role": "user", "content": "go"}]}).decode()
        events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
        kinds = [e["type"] for e in events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        block = [e for e in events if e["type"] == "content_block_start"][-1]["content_block"]
        assert block["type"] == "tool_use" and block["name"] == "Write"
        partial = [e for e in events if e.get("delta", {}).get("type") == "input_json_delta"][0]
        assert json.loads(partial["delta"]["partial_json"]) == {"file_path": "/w/x", "content": "y"}
        # A call without tools (Claude Code's title / quota probes) does not consume the script.
        side = json.loads(_post(srv.base_url + "/v1/messages", {"model": "h", "messages": []}))
        assert side["content"][0]["text"] == "done"
    assert [r.step for r in srv.model_calls()] == [0]


def test_a_hang_ends_when_the_server_stops():
    srv = ScriptedServer(Script(steps=[hang()])).start()
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0, timeout=2)
    with pytest.raises(openai.APITimeoutError):
        list(client.chat.completions.create(model="m", messages=[], stream=True))
    srv.stop()


def test_script_file_and_bad_script_exit_2(tmp_path, capsys):
    from kloop.agents.scripted_server import main

    good = tmp_path / "s.json"
    good.write_text(json.dumps([{"text": "hi"}, {"calls": [{"name": "Read", "args": {"p": 1}}]}]))
    assert Script.load(good).steps[1].calls[0].name == "Read"
    bad = tmp_path / "bad.json"
    bad.write_text('[{"txt": 1}]')
    assert main([str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
