"""`kloop doctor --agents`: which agent CLIs are here, their versions, and whether kloop can drive them.

For each CLI found (kloop's tools prefix, `$KLOOP_<NAME>_BIN`, PATH) two short calls go through
kloop's own adapter against the scripted model server on 127.0.0.1 — nothing leaves the machine:
a writer that must create a file in a scratch workspace (sandbox and containment included), and a
reviewer whose verdict must parse. A CLI that is present but fails either call is reported with
the reason, so a campaign does not discover it hours in.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kloop.agents.base import AgentRequest, AgentStatus, Role
from kloop.agents.claude import ClaudeAgent
from kloop.agents.cli_process import CliAgent, Endpoint, agent_env, version_of
from kloop.agents.codex import CodexAgent
from kloop.agents.kimi import KimiAgent
from kloop.agents.kimi_legacy import LegacyKimiAgent
from kloop.agents.scripted_server import ScriptedServer, Step, call, text

PROBE_LIMIT_S = 180.0
PROBE_VERDICT = '{"decision": "accept", "progress": "advanced", "findings": [], "summary": "probe"}'


def _heredoc(path: Path, content: str) -> str:
    return f"cat > {path} <<'KLOOP_EOF'\n{content}KLOOP_EOF\n"


# How each CLI's model writes a file with the CLI's own tools (Claude Code writes only what it has Read).
SCRIPTED_WRITE: dict[str, Callable[[Path, str], list[Step]]] = {
    "claude": lambda p, c: [call("Read", file_path=str(p)), call("Write", file_path=str(p), content=c)],
    "codex": lambda p, c: [call("exec_command", cmd=_heredoc(p, c))],
    "kimi": lambda p, c: [call("Write", path=str(p), content=c)],
    "kimi-legacy": lambda p, c: [call("WriteFile", path=str(p), content=c)],
}
SCRIPTED_SHELL: dict[str, Callable[[str], Step]] = {
    "claude": lambda cmd: call("Bash", command=cmd),
    "codex": lambda cmd: call("exec_command", cmd=cmd),
    "kimi": lambda cmd: call("Bash", command=cmd),
    "kimi-legacy": lambda cmd: call("Shell", command=cmd),
}


VERDICT_TOOLS = {"claude": "StructuredOutput", "kimi": "mcp__kloop__submit_verdict", "kimi-legacy": "submit_verdict",
                 "openai": "submit_verdict"}
"""Each reviewer's verdict tool as its model sees it (Codex has none: its channel is the output schema)."""


def scripted_verdict(name: str, verdict: dict[str, Any]) -> list[Step]:
    """How each reviewer's model hands in a verdict: a verdict tool call (Claude Code's StructuredOutput,
    kloop's submit_verdict over MCP for Kimi, the `openai:` agent's own), or Codex's final answer under
    its output schema."""
    tool = VERDICT_TOOLS.get(name)
    if tool is not None:
        return [call(tool, **verdict), text("verdict given")]
    return [text(json.dumps(verdict))]


ADAPTERS: dict[str, type[CliAgent]] = {"claude": ClaudeAgent, "codex": CodexAgent, "kimi": KimiAgent,
                                       "kimi-legacy": LegacyKimiAgent}


def scripted_adapter(name: str, srv: ScriptedServer) -> CliAgent:
    """The named adapter pointed at a scripted server (each CLI adds its own API path)."""
    if name == "claude":
        return ClaudeAgent(Endpoint(base_url=srv.base_url, api_key="scripted"))
    endpoint = Endpoint(base_url=srv.base_url + "/v1", api_key="scripted", model="scripted-model")
    return ADAPTERS[name](endpoint)


def _probe(name: str, role: Role, steps_for: Callable[[Path], list[Step]],
           check: Callable[[Any, Path], str | None]) -> str | None:
    """Run one scripted call in a scratch workspace; None when it worked, else why not."""
    with tempfile.TemporaryDirectory(prefix=f"kloop-doctor-{name}-") as tmp:
        ws = Path(tmp) / "workspace"
        (ws / "solution").mkdir(parents=True)
        (ws / "solution" / "probe.txt").write_text("before\n")
        request = AgentRequest(role=role, prompt="kloop doctor probe", workspace=ws, read_only=role is Role.reviewer,
                               time_limit_s=PROBE_LIMIT_S, artifacts_dir=Path(tmp) / "art")
        with ScriptedServer(steps_for(ws)) as srv:
            try:
                result = scripted_adapter(name, srv).run(request)
            except OSError as exc:
                return f"could not start: {exc}"
        if result.status is not AgentStatus.completed:
            return f"{result.status.value}: {result.final_message[:160]}"
        return check(result, ws)


def _wrote(result: Any, ws: Path) -> str | None:
    ok = (ws / "solution" / "probe.txt").read_text() == "after\n"
    return None if ok else "the scripted write did not reach the workspace"


def _judged(result: Any, ws: Path) -> str | None:
    return None if result.verdict is not None else "no verdict parsed from the answer"


def probe_cli(name: str) -> dict[str, Any]:
    """Version and the two scripted calls (writer, reviewer) for one CLI."""
    argv = ADAPTERS[name]().program_argv()
    if argv is None:
        return {"name": name, "found": False, "command": None, "version": None, "writer": None, "reviewer": None}
    with tempfile.TemporaryDirectory(prefix="kloop-doctor-home-") as home:
        version = version_of(argv, agent_env(Path(home)))

    def writer_steps(ws: Path) -> list[Step]:
        return [*SCRIPTED_WRITE[name](ws / "solution" / "probe.txt", "after\n"), text("wrote the probe")]

    return {"name": name, "found": True, "command": " ".join(argv), "version": version,
            "writer": _probe(name, Role.writer, writer_steps, _wrote),
            "reviewer": _probe(name, Role.reviewer, lambda ws: scripted_verdict(name, json.loads(PROBE_VERDICT)),
                               _judged)}


def agents_report(names: tuple[str, ...] = tuple(ADAPTERS)) -> list[dict[str, Any]]:
    """One row per CLI: found, command, version, and `writer` / `reviewer` = None (worked) or the reason.

    The CLIs are probed side by side, one thread each up to the machine's cores (every probe has its own
    scratch workspace, home and scripted server): one after another, the four kept one core busy for 51 s
    here (46 s of CPU); side by side on two cores they took 25 s."""
    with ThreadPoolExecutor(max_workers=max(1, min(len(names), os.cpu_count() or 1))) as pool:
        return list(pool.map(probe_cli, names))


def print_agents(rows: list[dict[str, Any]]) -> None:
    """The report as a table (rich), one row per CLI."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="agent CLIs (scripted calls on 127.0.0.1 through kloop's adapters)")
    for column in ("agent", "version", "writer call", "reviewer call", "command"):
        table.add_column(column)
    for row in rows:
        if not row["found"]:
            table.add_row(row["name"], "[red]not found[/red]", "-", "-", "scripts/agent-clis.sh installs it")
            continue
        cells = ["[green]works[/green]" if row[k] is None else f"[red]{row[k]}[/red]" for k in ("writer", "reviewer")]
        table.add_row(row["name"], row["version"] or "?", *cells, row["command"])
    Console().print(table)


def failed(rows: list[dict[str, Any]]) -> bool:
    """True when a CLI is present but a scripted call through its adapter did not work."""
    return any(r["found"] and (r["writer"] is not None or r["reviewer"] is not None) for r in rows)
