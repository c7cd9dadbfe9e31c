"""Loading tasks and solutions from disk; every malformed input is one BadInput line.

Layouts (DESIGN.md): a task directory holds `definition.json`, `workloads.jsonl`, optional
`baseline/` (a solution directory) and optional `README.md`. A FlashInfer-Trace dataset
root holds `definitions/`, `workloads/` and `solutions/` (possibly nested by op type). A
solution is a directory with `solution.json` (sources may omit `content`, then read from
`path` next to it) or a FlashInfer-Trace Solution JSON file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task.parsing import parse_json, read_json, read_text, validate
from kloop.task.schema import Definition, SafetensorsInput, Solution, Workload, check_relative_source_path
from kloop.task.shapes import check_workload
from kloop.task.tunables import render_tunables

DEFINITION_FILE = "definition.json"
WORKLOADS_FILE = "workloads.jsonl"
BASELINE_DIR = "baseline"
SOLUTION_FILE = "solution.json"
README_FILE = "README.md"


@dataclass(frozen=True)
class Task:
    """A loaded, validated task: what the verifier and the loop work from."""

    root: Path
    """Directory that relative paths (safetensors inputs) resolve against."""
    definition: Definition
    workloads: list[Workload]
    baseline: Solution | None = None
    """The naive solution to beat; None means the definition's reference is the baseline."""
    readme: str | None = None
    definition_path: Path | None = None
    workloads_path: Path | None = None
    baseline_path: Path | None = None
    extra_solutions: list[Path] = field(default_factory=list)
    """Solution files or directories shipped with the task (examples' `solutions/`, FIB `solutions/`)."""

    @property
    def name(self) -> str:
        return self.definition.name

    def baseline_or_reference(self) -> Solution:
        """The solution to beat: the shipped baseline, else the definition's reference."""
        return self.baseline or reference_solution(self.definition)


def reference_solution(definition: Definition) -> Solution:
    """The definition's reference as a python solution: the baseline when a task ships none.

    One builder for the verifier (timing baseline) and the loop (the workspace's round 0).
    """
    return Solution.model_validate({
        "name": f"{definition.name}_reference", "definition": definition.name, "author": "kloop",
        "spec": {"language": "python", "target_hardware": ["cpu", "cuda"], "entry_point": "main.py::run",
                 "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": definition.reference}],
        "description": "The definition's reference, the starting point when the task ships no baseline.",
    })  # fmt: skip


def load_definition(path: Path) -> Definition:
    """Read and validate one FlashInfer-Trace Definition JSON file."""
    return validate(Definition, read_json(path, "definition"), path)


def load_workloads(path: Path, definition: Definition, root: Path) -> list[Workload]:
    """Read a workloads JSONL file (FIB trace lines or bare workloads), checking every line."""
    text = read_text(path, "workloads file")
    workloads: list[Workload] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):  # JSON strings may hold U+2028
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        workload = _parse_workload_line(line, where, definition.name)
        if workload.uuid in seen:
            raise BadInput(where, f"duplicate workload uuid {workload.uuid!r} (first on line {seen[workload.uuid]})")
        seen[workload.uuid] = lineno
        check_workload(definition, workload, where)
        _check_safetensors_inputs(workload, root, where)
        workloads.append(workload)
    if not workloads:
        raise BadInput(path, "no workloads (the file has no lines)")
    return workloads


def _parse_workload_line(line: str, where: str, definition_name: str) -> Workload:
    data = parse_json(line, where)
    if isinstance(data, dict) and "workload" in data:
        named = data.get("definition")
        if named is not None and named != definition_name:
            raise BadInput(where, f"line is for definition {named!r}, expected {definition_name!r}")
        data = data["workload"]
    return validate(Workload, data, where)


def _check_safetensors_inputs(workload: Workload, root: Path, where: str) -> None:
    for name, spec in workload.inputs.items():
        if isinstance(spec, SafetensorsInput):
            resolve_inside(root, spec.path, where, f"safetensors file of input {name!r}")


def resolve_inside(root: Path, relpath: str, where: str | Path, what: str) -> Path:
    """`root/relpath` if it exists and (after symlinks) stays inside `root`; else BadInput."""
    try:
        check_relative_source_path(relpath)
    except ValueError as exc:
        raise BadInput(where, f"{what}: {exc}") from None
    target = root / relpath
    if not target.exists():
        raise BadInput(where, f"{what} {relpath!r} not found under {root}")
    real_root = root.resolve()
    if not target.resolve().is_relative_to(real_root):
        raise BadInput(where, f"{what} {relpath!r} points outside {root} (symlink)")
    return target


def load_task(path: str | Path) -> Task:
    """Load a task directory: definition, workloads, optional baseline and README."""
    root = Path(path)
    if not root.exists():
        raise BadInput(root, "task directory not found")
    if not root.is_dir():
        raise BadInput(root, "a task must be a directory holding definition.json and workloads.jsonl")
    definition_path = root / DEFINITION_FILE
    definition = load_definition(definition_path)
    workloads_path = root / WORKLOADS_FILE
    workloads = load_workloads(workloads_path, definition, root)
    baseline_path = root / BASELINE_DIR
    baseline = None
    if baseline_path.exists():
        baseline = load_solution(baseline_path)
        _check_solution_matches(baseline, definition, baseline_path)
    readme_path = root / README_FILE
    readme = read_text(readme_path, "README") if readme_path.is_file() else None
    extra = _shipped_solutions(root / "solutions")
    return Task(
        root=root, definition=definition, workloads=workloads, baseline=baseline, readme=readme,
        definition_path=definition_path, workloads_path=workloads_path,
        baseline_path=baseline_path if baseline is not None else None, extra_solutions=extra,
    )  # fmt: skip


def _shipped_solutions(folder: Path) -> list[Path]:
    """Solution directories and JSON files in a task's `solutions/` (other files ignored)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / SOLUTION_FILE).is_file() or p.suffix == ".json")


def _check_solution_matches(solution: Solution, definition: Definition, where: Path) -> None:
    if solution.definition != definition.name:
        raise BadInput(where, f"solution is for definition {solution.definition!r}, task is {definition.name!r}")


def load_fib_task(root: str | Path, definition_name: str) -> Task:
    """Load one definition of a FlashInfer-Trace dataset root (definitions/, workloads/, solutions/)."""
    root = Path(root)
    if not root.is_dir():
        raise BadInput(root, "FlashInfer-Trace dataset root not found")
    definition_path = _find_named(root / "definitions", definition_name, ".json")
    if definition_path is None:
        raise BadInput(root / "definitions", f"no definition named {definition_name!r}")
    definition = load_definition(definition_path)
    if definition.name != definition_name:
        raise BadInput(definition_path, f"file defines {definition.name!r}, expected {definition_name!r}")
    workloads_path = _find_named(root / "workloads", definition_name, ".jsonl")
    if workloads_path is None:
        raise BadInput(root / "workloads", f"no workloads file for {definition_name!r}")
    workloads = load_workloads(workloads_path, definition, root)
    return Task(
        root=root, definition=definition, workloads=workloads, definition_path=definition_path,
        workloads_path=workloads_path, extra_solutions=fib_solution_files(root, definition_name),
    )  # fmt: skip


def _find_named(folder: Path, name: str, suffix: str) -> Path | None:
    if not folder.is_dir():
        return None
    matches = sorted(folder.rglob(f"{name}{suffix}"))
    return matches[0] if matches else None


def fib_solution_files(root: Path, definition_name: str) -> list[Path]:
    """Solution JSON files under `root/solutions` that name `definition_name` (unreadable ones skipped)."""
    found: list[Path] = []
    folder = root / "solutions"
    if not folder.is_dir():
        return found
    for candidate in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("definition") == definition_name:
            found.append(candidate)
    return found


def load_solution(path: str | Path, *, render_defaults: bool = True) -> Solution:
    """Load a solution directory (`solution.json`, contents from files) or a FIB Solution JSON file.

    A solution declaring tunables is returned as its default configuration unless
    `render_defaults` is False (the tuner wants the placeholders).
    """
    path = Path(path)
    if not path.exists():
        raise BadInput(path, "solution not found")
    if path.is_dir():
        manifest, folder = path / SOLUTION_FILE, path
    else:
        manifest, folder = path, path.parent
    data = read_json(manifest, "solution file")
    if isinstance(data, dict) and isinstance(data.get("sources"), list):
        data = {**data, "sources": [_fill_source(s, folder, manifest) for s in data["sources"]]}
    solution = validate(Solution, data, manifest)
    return render_tunables(solution) if render_defaults else solution


def _fill_source(entry: Any, folder: Path, manifest: Path) -> Any:
    """Read an entry's content from `folder/path` when the entry omits it."""
    if not isinstance(entry, dict) or entry.get("content") is not None:
        return entry
    relpath = entry.get("path")
    if not isinstance(relpath, str) or not relpath:
        return entry  # schema validation reports the bad path
    target = resolve_inside(folder, relpath, manifest, "source file")
    if not target.is_file():
        raise BadInput(manifest, f"source file {relpath!r} is not a regular file")
    return {**entry, "content": read_text(target, f"source file {relpath!r}")}


def pack_solution(path: str | Path, *, render_defaults: bool = True) -> Solution:
    """A solution directory as one self-contained FIB Solution (contents inlined)."""
    return load_solution(path, render_defaults=render_defaults)


def write_solution_dir(solution: Solution, path: str | Path) -> Path:
    """Write `solution` as a directory: `solution.json` without contents, plus each source file."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    for source in solution.sources:
        target = folder / source.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.content, encoding="utf-8")
    manifest = solution.model_dump(mode="json", exclude_none=True)
    manifest["sources"] = [{"path": s.path} for s in solution.sources]
    (folder / SOLUTION_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return folder


def load_task_arg(
    task: str | Path | None, *, fib_root: str | Path | None = None, definition: str | None = None
) -> Task:
    """What commands take: a task directory, or `--fib-root DIR --definition NAME` (not both)."""
    if fib_root is not None or definition is not None:
        if task is not None:
            raise BadInput(task, "give either a task directory or --fib-root with --definition, not both")
        if fib_root is None or definition is None:
            raise BadInput("--fib-root/--definition", "both --fib-root and --definition are needed")
        return load_fib_task(fib_root, definition)
    if task is None:
        raise BadInput("TASK", "no task given (a task directory, or --fib-root with --definition)")
    return load_task(task)
