"""notes/plan.md: goal, acceptance criteria, baseline facts and hypotheses, as research writes it.

kloop freezes the plan (its hash kept in the lineage) when research ends, or when a person
approves it; a run without a research stage starts from the same plan with no baseline check.
"""

from __future__ import annotations

from kloop.loop.config import RunConfig
from kloop.loop.context import TaskFacts
from kloop.verify.result import VerifyResult


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
