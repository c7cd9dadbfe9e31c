"""The loop's I/O boundaries as objects passed in: clock, profiler, wiki, and the agent call.

`Services` bundles them: agents (writer, reviewer, tuner, researcher), verifier, profiler, wiki,
clock, progress view, ceiling.

Defaults use the real thing when it is present (the wiki database, a vendor profiler) and
say nothing otherwise; tests pass their own clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kloop.agents.base import Agent, AgentRequest, AgentResult, AgentStatus
from kloop.loop.ceiling import Ceiling, NoCeiling
from kloop.loop.progress import NullProgress, ProgressView
from kloop.loop.verifier import Verifier


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class Profiler(Protocol):
    """Profiles one solution and returns a markdown digest (None when no profiler applies)."""

    def digest(self, task_dir: Path, solution_dir: Path, out_dir: Path) -> str | None: ...


class NoProfiler:
    """CPU runs and machines without ncu / rocprofv3: no digest."""

    def digest(self, task_dir: Path, solution_dir: Path, out_dir: Path) -> str | None:
        return None


class VendorProfiler:
    """ncu or rocprofv3 through `kloop.profile.collect`, when one is on PATH; otherwise no digest."""

    def __init__(self, device: str = "auto") -> None:
        self.device = device

    def _tool(self) -> str | None:
        """ncu on NVIDIA, rocprofv3 on ROCm (the device kind as `kloop.device` resolves it), if on PATH."""
        import shutil

        from kloop.device.detect import resolve_kind
        from kloop.device.schema import DeviceKind
        from kloop.errors import BadInput

        try:
            kind = resolve_kind(self.device)
        except BadInput:  # no such device here: the verifier says so; the profiler has nothing to run on
            return None
        tool = {DeviceKind.CUDA: "ncu", DeviceKind.ROCM: "rocprofv3"}.get(kind)
        return tool if tool and shutil.which(tool) else None

    def digest(self, task_dir: Path, solution_dir: Path, out_dir: Path) -> str | None:
        tool = self._tool()
        if tool is None:
            return None
        try:
            from kloop.profile.collect import Tool, collect

            path = collect(task_dir, solution_dir, out_dir / "profile", tool=Tool(tool))
            return path.read_text(encoding="utf-8")
        except Exception as exc:  # a profiler failure costs the digest, never the round
            return f"(profiling with {tool} failed: {type(exc).__name__}: {exc})"


class Wiki(Protocol):
    """Searches kernel knowledge; each hit is one short markdown line citing its source."""

    def search(self, query: str, k: int = 5) -> list[str]: ...


class NoWiki:
    def search(self, query: str, k: int = 5) -> list[str]:
        return []


class KernelWiki:
    """KernelWiki at its default path, when the database exists."""

    def __init__(self, db_path: Path | None = None) -> None:
        self.db_path = db_path

    def search(self, query: str, k: int = 5) -> list[str]:
        from kloop.wiki import WikiStore, default_db_path, render_for_agent

        path = self.db_path or default_db_path()
        if not Path(path).is_file():
            return []
        try:
            hits = WikiStore(path).search(query, k=k)
        except Exception as exc:  # a broken wiki must not stop a run; say so in the prompt
            return [f"- (wiki search failed: {type(exc).__name__}: {exc})"]
        # render_for_agent fences upstream text (a fence it cannot close) and names provenance
        return render_for_agent(hits).splitlines() if hits else []


@dataclass
class Services:
    """Every I/O boundary of a run, passed in."""

    writer: Agent
    reviewer: Agent
    tuner: Agent
    verifier: Verifier
    profiler: Profiler = field(default_factory=NoProfiler)
    wiki: Wiki = field(default_factory=NoWiki)
    clock: Clock = field(default_factory=SystemClock)
    progress: ProgressView = field(default_factory=NullProgress)
    ceiling: Ceiling = field(default_factory=NoCeiling)
    researcher: Agent | None = None
    """Writes notes/plan.md in the research stage; None: kloop's template plan."""
    kloop_digest: Callable[[], str] | None = None
    """Hashes kloop's own installed package, checked around every round (None: not checked)."""


def call_agent(agent: Agent, request: AgentRequest) -> AgentResult:
    """Run one agent turn under its time limit; a crash or a hang becomes a result, never an exception.

    In-process agents run on a worker thread; one that hangs is abandoned (CLI adapters kill
    their subprocess themselves). The round is then rejected and the workspace reverted.
    """
    box: dict[str, AgentResult | BaseException] = {}

    def work() -> None:
        try:
            box["result"] = agent.run(request)
        except BaseException as exc:  # the agent's failure is the round's verdict
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"agent-{request.role.value}", daemon=True)
    worker.start()
    worker.join(request.time_limit_s)
    if worker.is_alive():
        return AgentResult(status=AgentStatus.timed_out,
                           final_message=f"no answer within {request.time_limit_s:g}s")
    if "error" in box:
        exc = box["error"]
        return AgentResult(status=AgentStatus.crashed, final_message=f"{type(exc).__name__}: {exc}")
    result = box["result"]
    if not isinstance(result, AgentResult):
        return AgentResult(status=AgentStatus.crashed, final_message=f"returned {type(result).__name__}")
    if result.status is AgentStatus.over_budget:  # an agent's (or its gateway's) own budget reason is kept
        return result
    limit, tokens = request.cost_limit_usd, request.token_limit
    if limit is not None and result.cost_usd is not None and result.cost_usd > limit:
        return result.model_copy(update={
            "status": AgentStatus.over_budget,
            "final_message": f"cost ${result.cost_usd:.2f} over the ${limit:.2f} limit",
        })
    if tokens is not None and result.tokens is not None and result.tokens > tokens:  # its last answer crossed it
        return result.model_copy(update={
            "status": AgentStatus.over_budget,
            "final_message": f"{result.tokens} tokens over the {tokens} token limit",
        })
    return result
