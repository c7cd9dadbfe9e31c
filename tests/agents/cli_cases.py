"""Each real CLI's tool vocabulary, so one scripted model can drive all three adapters in the tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kloop.agents.claude import ClaudeAgent
from kloop.agents.cli_process import CliAgent, Endpoint
from kloop.agents.codex import CodexAgent
from kloop.agents.kimi import KimiAgent
from kloop.agents.scripted_server import ScriptedServer, Step, call


@dataclass(frozen=True)
class Cli:
    """How to build the adapter against a scripted server and how its model calls its tools."""

    name: str
    make: Callable[[ScriptedServer], CliAgent]
    write: Callable[[Path, str], list[Step]]  # Claude Code writes only a file it has Read
    shell: Callable[[str], Step]
    installed: Callable[[], bool]


def _heredoc(path: Path, content: str) -> str:
    return f"cat > {path} <<'KLOOP_EOF'\n{content}KLOOP_EOF\n"


CLIS = [
    Cli("claude", lambda s: ClaudeAgent(Endpoint(base_url=s.base_url, api_key="scripted")),
        lambda p, c: [call("Read", file_path=str(p)), call("Write", file_path=str(p), content=c)], lambda cmd: call("Bash", command=cmd),
        lambda: ClaudeAgent().program_argv() is not None),
    Cli("codex", lambda s: CodexAgent(Endpoint(base_url=s.base_url + "/v1", api_key="scripted",
                                               model="scripted-model")),
        lambda p, c: [call("exec_command", cmd=_heredoc(p, c))], lambda cmd: call("exec_command", cmd=cmd),
        lambda: CodexAgent().program_argv() is not None),
    Cli("kimi", lambda s: KimiAgent(Endpoint(base_url=s.base_url + "/v1", api_key="scripted",
                                             model="scripted-model")),
        lambda p, c: [call("Write", path=str(p), content=c)], lambda cmd: call("Bash", command=cmd),
        lambda: KimiAgent().program_argv() is not None),
]


def cli_params() -> list[object]:
    """One pytest param per CLI; a CLI that setup did not install is skipped with the reason."""
    return [pytest.param(c, id=c.name, marks=pytest.mark.skipif(
        not c.installed(), reason=f"{c.name} CLI missing: run scripts/agent-clis.sh (setup does)")) for c in CLIS]
