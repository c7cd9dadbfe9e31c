"""`kloop wiki build --preset`: ingest every known repository of a preset found in a folder of clones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kloop.errors import BadInput
from kloop.wiki.git_ingest import GitIngester, IngestReport
from kloop.wiki.presets import find_clones, preset_repos
from kloop.wiki.provenance import KernelPathRules
from kloop.wiki.store import WikiStore


def build_preset(
    store: WikiStore, clones_dir: Path, preset: str, on_report: Callable[[IngestReport], None] | None = None
) -> list[IngestReport]:
    """Ingest each known repository of `preset` in `clones_dir` with its own paths (incremental)."""
    found = find_clones(clones_dir, preset)
    if not found:
        names = ", ".join(r.name.split("/")[1] for r in preset_repos(preset))
        raise BadInput(clones_dir, f"no clone of a known {preset} repository here (looked for {names})")
    plain = GitIngester(store)
    reports = []
    for repo, path in found:
        ingester = plain  # unless everything under some paths is kernel code (a compiler backend)
        if repo.kernel_paths:
            ingester = GitIngester(store, rules=KernelPathRules(kernel_globs=list(repo.kernel_paths)))
        report = ingester.ingest(path, repo=repo.name, since=repo.since, paths=list(repo.paths), vendor=repo.preset,
                                 history=True)
        reports.append(report)
        if on_report is not None:
            on_report(report)
    return reports
