"""Stage work that is not a writer round: reading the task, the research that writes the plan.

research: check that the baseline works, search the wiki, profile the baseline when a
profiler applies, and write notes/plan.md with acceptance criteria. kloop freezes the plan
(its hash kept in the lineage) when research ends, or when a person approves it.
"""

from __future__ import annotations

import json
from pathlib import Path

from kloop.errors import BadInput
from kloop.loop.config import RunConfig
from kloop.loop.rounds import TaskFacts
from kloop.verify.result import VerifyResult


def read_task_facts(sealed: Path) -> TaskFacts:
    """Name, description and the listed values of each var axis, read as plain JSON (no torch)."""
    path = sealed / "definition.json"
    try:
        definition = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BadInput(path, f"unreadable definition: {exc}") from None
    axes: dict[str, set[int]] = {}
    var_axes = {n for n, a in (definition.get("axes") or {}).items() if a.get("type") == "var"}
    workloads = sealed / "workloads.jsonl"
    for line in workloads.read_text(encoding="utf-8").splitlines() if workloads.is_file() else []:
        if not line.strip():
            continue
        data = json.loads(line)
        workload = data.get("workload", data)
        for name, value in (workload.get("axes") or {}).items():
            if name in var_axes and isinstance(value, int):
                axes.setdefault(name, set()).add(value)
    return TaskFacts(name=str(definition.get("name", sealed.name)),
                     description=str(definition.get("description") or ""),
                     listed_axes={k: sorted(v) for k, v in axes.items()})


def reference_solution_files(sealed: Path) -> dict[str, str]:
    """A solution directory wrapping the definition's reference, for tasks without baseline/."""
    definition = json.loads((sealed / "definition.json").read_text(encoding="utf-8"))
    meta = {
        "name": f"{definition['name']}-reference", "definition": definition["name"], "author": "kloop",
        "spec": {"language": "python", "target_hardware": ["cpu", "cuda"], "entry_point": "main.py::run",
                 "destination_passing_style": False},
        "sources": [{"path": "main.py"}],
        "description": "The definition's reference, the starting point when the task ships no baseline.",
    }
    return {"solution.json": json.dumps(meta, indent=2) + "\n", "main.py": definition["reference"]}


def _criteria(config: RunConfig) -> list[str]:
    target = (f"geomean speedup over the baseline of at least {config.target_speedup:g}x"
              if config.target_speedup else "a geomean speedup whose confidence interval clears the current best")
    return [
        "The verifier passes every check: correctness on the listed and held-out workloads, "
        "all outputs written, inputs unmodified, determinism, integrity of the sealed task.",
        f"Speed: {target}, measured by kloop's verifier, never by the writer.",
        "The reviewer accepts: no reading of task files, no reference or kloop imports, no special-casing "
        "of listed shapes, no caching across calls, no timing tricks.",
    ]


def plan_markdown(facts: TaskFacts, config: RunConfig, baseline: VerifyResult | None,
                  wiki_hits: list[str], digest: str | None) -> str:
    """notes/plan.md: goal, acceptance criteria, what is known about the baseline, hypotheses to test."""
    lines = [f"# Plan: {facts.name}", "", "## Goal", facts.description or f"Make {facts.name} faster.", "",
             "## Acceptance criteria"]
    lines += [f"{i}. {c}" for i, c in enumerate(_criteria(config), start=1)]
    lines += ["", "## Baseline"]
    if baseline is None:
        lines.append("Not checked (no research stage).")
    else:
        lines.append(f"Verifier status {baseline.status.value} on {len(baseline.workloads)} workloads.")
        lines += [f"- {r}" for r in baseline.reasons]
    axes = ", ".join(f"{k} in {v}" for k, v in facts.listed_axes.items()) or "none"
    lines += [f"Listed var axes: {axes} (held-out values are verified too).", "", "## Hypotheses to test",
              "- H1: the baseline's per-element interpreter/launch overhead dominates; vectorize or fuse.",
              "- H2: memory traffic dominates; read inputs once and keep intermediates in registers/cache.",
              "- H3: tile and thread parameters matter; declare them as tunables and let the tuner search.",
              "Each hypothesis is kept or falsified by measured speedups recorded in the lineage."]
    if digest:
        lines += ["", "## Baseline profile", digest.strip()]
    if wiki_hits:
        lines += ["", "## Related knowledge (wiki, untrusted excerpts)", *wiki_hits]
    return "\n".join(lines) + "\n"
