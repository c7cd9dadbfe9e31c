"""kloop's own capabilities as agent tools: verify, profile analyze, wiki search, wiki show.

One implementation serves both the `openai:` agent's tool calls and `kloop mcp`. Each tool takes
plain arguments and answers text meant for a model: a compact verdict JSON, a profile digest in
markdown, or wiki text with upstream content fenced as untrusted. A bad argument raises
`KloopError` (the callers turn it into an error result the model can read); a candidate that fails
verification is an answer, not an error.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["profile_analyze", "verify_solution", "wiki_search", "wiki_show"]


def verify_solution(task: Path, solution: Path, *, workloads: int | None = None, timing: bool = True,
                    device: str = "auto") -> str:  # fmt: skip
    """Run kloop's hermetic verifier (a fresh sandbox) and answer the verdict without the noise.

    The agent sees what a person would look at first: status, reasons, failed checks, the
    speedup and per-workload numbers. The full JSON stays `kloop verify --json`'s job.
    """
    from kloop.task.load import load_task
    from kloop.verify import VerifyOptions, verify

    options = VerifyOptions(device=device, workloads=workloads, timing=timing, speedup=timing)
    result = verify(load_task(Path(task)), Path(solution), options)
    data = result.model_dump(mode="json")
    brief = {
        "status": data.get("status"),
        "reasons": data.get("reasons", []),
        "failed_checks": [c for c in data.get("checks", []) if not c.get("passed")],
        "summary": data.get("summary"),
        "workloads": [
            {k: w.get(k) for k in ("uuid", "axes", "heldout", "status", "max_abs_error", "latency_ms", "speedup")}
            for w in data.get("workloads", [])
        ],
    }
    return json.dumps(brief, indent=1)


def profile_analyze(report: Path, *, against: Path | None = None, min_bytes: float | None = None,
                    min_flops: float | None = None) -> str:  # fmt: skip
    """The profiler digest (findings ranked, exactly one next edit), diffed against a base when given."""
    from kloop.profile.diff import diff_reports
    from kloop.profile.digest import analyze, digest_markdown
    from kloop.profile.read import read

    reports = analyze(read(Path(report)), min_bytes=min_bytes, min_flops=min_flops)
    diff = None
    if against is not None:
        diff = diff_reports(analyze(read(Path(against)), min_bytes=min_bytes, min_flops=min_flops), reports)
    return digest_markdown(reports, diff)


def wiki_search(query: str, *, k: int = 5, vendor: str | None = None, arch: str | None = None,
                db: Path | None = None) -> str:  # fmt: skip
    """KernelWiki hits as an agent reads them: id, confidence, provenance, fenced snippet."""
    from kloop.wiki import WikiStore
    from kloop.wiki.render import render_for_agent

    with WikiStore(db) as store:
        hits = store.search(query, k=max(1, min(int(k), 20)), vendor=vendor, arch=arch)
        guidance = store.guidance(query, vendor=vendor, arch=arch, shown=frozenset(h.id for h in hits))
    return render_for_agent(hits, guidance)


def wiki_show(entry_id: str, *, db: Path | None = None) -> str:
    """One KernelWiki entry, metadata in the clear and upstream text fenced."""
    from kloop.errors import BadInput
    from kloop.wiki import WikiStore
    from kloop.wiki.render import render_entry

    with WikiStore(db) as store:
        entry = store.get(entry_id)
    if entry is None:
        raise BadInput(entry_id, "no such wiki entry")
    return render_entry(entry)
