"""Codex CLI (`codex exec --json`) as writer, researcher or reviewer.

The model provider comes from `-c` flags (Codex ignores OPENAI_BASE_URL), stdin is /dev/null
(`codex exec` otherwise waits on it) and the prompt follows `--` (a prompt such as "review" would
be read as a subcommand). Writer: `--sandbox workspace-write` with /tmp and $TMPDIR excluded, so
the shell it gives the model can write only the workspace and has no network. Codex's own bubblewrap
sandbox cannot start inside kloop's containment (it fails to write its uid map), so for Codex the
CLI's sandbox *is* the containment. Reviewer: `--sandbox read-only` and `--output-schema` for the
verdict. `--json` leaves out commands that failed, so refusals are read from the session rollout
Codex writes under its own home (the function outputs the model was shown).
"""

from __future__ import annotations

import json
import shutil
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
    prompt_file,
    read_jsonl,
    read_only_role,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VAR = "KLOOP_CODEX_MODEL_KEY"  # the provider's env_key: holds only the gateway's call token


def verdict_schema() -> dict[str, Any]:
    """The verdict contract as a strict JSON schema (every property required, none extra)."""
    finding = {"type": "object", "additionalProperties": False, "required": ["severity", "text"],
               "properties": {"severity": {"type": "string", "enum": ["low", "medium", "high"]},
                              "text": {"type": "string"}}}
    return {"type": "object", "additionalProperties": False,
            "required": ["decision", "progress", "findings", "summary"],
            "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]},
                           "progress": {"type": "string", "enum": ["advanced", "stalled", "regressed"]},
                           "findings": {"type": "array", "items": finding},
                           "summary": {"type": "string"}}}


class CodexAgent(CliAgent):
    name = "codex"
    default_base_url = DEFAULT_BASE_URL

    def program_argv(self) -> list[str] | None:
        exe = self.program or find_program("codex", "KLOOP_CODEX_BIN")
        return [str(exe)] if exe else None

    def provider_flags(self) -> list[str]:
        base = self.endpoint.base_url or DEFAULT_BASE_URL
        provider = f'{{name="kloop",base_url="{base}",env_key="{KEY_VAR}",wire_api="responses"}}'
        flags = ["-c", "model_provider=kloop", "-c", f"model_providers.kloop={provider}",
                 "-c", "analytics.enabled=false", "--disable", "plugins", "-c", 'web_search="disabled"',
                 "--disable", "multi_agent", "--disable", "apps", "--disable", "browser_use",
                 "--disable", "computer_use", "--disable", "image_generation"]
        if self.endpoint.model:
            flags += ["-c", f"model={json.dumps(self.endpoint.model)}"]
        return flags

    def invocation(self, request: AgentRequest, home: Path) -> Invocation:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        argv = [*self.require_program(), "exec", "--json", "--skip-git-repo-check", "-C", str(request.workspace),
                *self.provider_flags()]
        last: Path | None = None
        # Codex's own bubblewrap sandbox cannot start inside kloop's containment (Landlock forbids the
        # mounts it makes), so kloop's containment is the sandbox: Codex runs with its own turned off.
        argv += ["--sandbox", "danger-full-access"]
        if read_only_role(request):
            schema = home / "verdict.schema.json"
            schema.write_text(json.dumps(verdict_schema()))
            last = home / "last-message.txt"
            # No command runner for a reviewer: the verdict comes from the output schema alone.
            argv += ["--disable", "shell_tool", "--output-schema", str(schema), "-o", str(last)]
        long_prompt = prompt_file(request, home)  # `-` : Codex reads the prompt from stdin
        argv += ["--", "-" if long_prompt else request.prompt]
        extra = {"CODEX_HOME": str(codex_home), KEY_VAR: self.endpoint.api_key or ""}
        return Invocation(argv=argv, env=agent_env(home, extra), last_message=last, stdin=long_prompt,
                          contained=True)

    def interpret(self, request: AgentRequest, outcome: CliOutcome, inv: Invocation, home: Path) -> AgentResult:
        events = outcome.events
        messages = [i["text"] for i in _items(events, "agent_message") if isinstance(i.get("text"), str)]
        final = messages[-1] if messages else ""
        failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
        tokens = sum(int((e.get("usage") or {}).get(k) or 0) for e in events if e.get("type") == "turn.completed"
                     for k in ("input_tokens", "output_tokens"))
        outputs = [str(i.get("aggregated_output") or "") for i in _items(events, "command_execution")]
        outputs += _rollout_outputs(home / ".codex", outcome.transcript)
        structured = None
        if inv.last_message is not None and inv.last_message.is_file():
            structured = inv.last_message.read_text(encoding="utf-8", errors="replace")
            final = final or structured
        ok = outcome.returncode == 0 and not failed and bool(final)
        if failed and not final:
            final = "codex: " + str(failed[-1].get("message") or (failed[-1].get("error") or {}).get("message"))
        return finish(request, outcome, final, ok=ok, tokens=tokens or None, cost=None,
                      denials=denials_in(outputs, "codex"), structured=structured)


def _items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e.get("type") == "item.completed"
            and isinstance(e.get("item"), dict) and e["item"].get("type") == kind]


def _rollout_outputs(codex_home: Path, transcript: Path) -> list[str]:
    """Function outputs recorded in the session rollout (includes commands `--json` leaves out).

    The rollout is kept verbatim next to the transcript: the agent's home is removed after the call.
    """
    outputs: list[str] = []
    for n, path in enumerate(sorted(codex_home.glob("sessions/**/rollout-*.jsonl"))):
        shutil.copyfile(path, transcript.with_name(transcript.stem + f".rollout-{n}.jsonl"))
        for line in read_jsonl(path):
            payload = line.get("payload") or {}
            if payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                out = payload.get("output")
                outputs.append(out if isinstance(out, str) else json.dumps(out))
    return outputs
