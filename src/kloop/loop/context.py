"""What every stage and round works from, passed as one object: the run's parts and the task.

`RunContext` is built once per campaign; `RoundRunner` and the stages read it rather than
taking the parts one by one, so adding a part (a researcher, a router) touches one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kloop.loop.config import RunConfig
from kloop.loop.lineage import Lineage
from kloop.loop.record import CandidateRecord
from kloop.loop.seal import Seal
from kloop.loop.services import Services
from kloop.loop.state import RunPaths
from kloop.loop.stopping import Blocked
from kloop.loop.workspace import Workspace
from kloop.task.load import Task, load_task


@dataclass
class TaskFacts:
    """What prompts and the reviewer need to know about the task (read through `kloop.task`)."""

    name: str
    description: str
    listed_axes: dict[str, list[int]] = field(default_factory=dict)


def task_facts(task: Task) -> TaskFacts:
    """Name, description and the listed values of each var axis."""
    var_axes = [name for name, axis in task.definition.axes.items() if axis.type == "var"]
    listed = {name: sorted({w.axes[name] for w in task.workloads if name in w.axes}) for name in var_axes}
    return TaskFacts(name=task.definition.name, description=task.definition.description or "",
                     listed_axes={name: values for name, values in listed.items() if values})


@dataclass
class RunContext:
    """One run's parts: where it lives, what it was asked, its I/O boundaries and its records."""

    paths: RunPaths
    config: RunConfig
    services: Services
    lineage: Lineage
    workspace: Workspace
    seal: Seal
    task: TaskFacts

    @classmethod
    def open(cls, run_dir: Path, config: RunConfig, services: Services) -> RunContext:
        seal = Seal(run_dir)
        paths = RunPaths(run_dir)
        return cls(paths=paths, config=config, services=services, lineage=Lineage(paths.lineage),
                   workspace=Workspace(paths.workspace), seal=seal,
                   task=task_facts(load_task(seal.pristine)))  # kloop's own copy: sealed/ may be mid-tamper

    def best(self) -> CandidateRecord:
        best = self.lineage.best()
        if best is None:
            raise Blocked("no baseline in the lineage")
        return best

    def head(self) -> CandidateRecord:
        head = self.lineage.head()
        if head is None:
            raise Blocked("no baseline in the lineage")
        return head

    def plan(self) -> str:
        """notes/plan.md as it stands ("" before research wrote it)."""
        path = self.workspace.notes / "plan.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""
