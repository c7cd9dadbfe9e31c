"""KernelWiki scale benchmark: ingest >= 100k generated commits, then time in-process searches.

    .venv/bin/python bench/wiki_scale.py [--commits 100000] [--repo DIR] [--queries 300]

Builds one synthetic repository with `git fast-import` (bench/wiki_corpus/generate.py), ingests
it into a fresh wiki (plus the shipped cards) with `kloop wiki ingest git`'s engine, and reports
commits/s, then p50/p95/max latency of WikiStore.search over a mixed query set (with alias
expansion, with filters). Targets: >= 2,000 commits/s, p95 < 50 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "wiki_corpus"))

from generate import build_scale_repo  # noqa: E402

from kloop.wiki.git_ingest import GitIngester  # noqa: E402
from kloop.wiki.store import WikiStore  # noqa: E402

QUERIES = [
    "tma multicast grouped gemm", "waves_per_eu fp8 moe", "shared memory bank conflicts", "split-k skinny gemm",
    "stream-k tail effect", "warpgroup mma hopper", "lds padding transposed tile", "online softmax decode attention",
    "fp8 block scaling deepseek", "persistent kernel launch overhead", "cp.async double buffering", "rmsnorm vectorized",
    "mfma matrix core fp16", "xcd remap l2 locality", "cuda graph decode", "register spill epilogue",
    "how do I hide global memory latency in a gemv", "top-k sampling without sort", "swizzle rasterization l2",
    "kernel", "gemm", "(((", "finding:tail_effect gemm", "AND OR NOT",
]
FILTERS = [{}, {"vendor": "amd"}, {"vendor": "nvidia"}, {"arch": "sm_90"}, {"tag": "gemm"}, {"kind": "card"}]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--repo", type=Path, help="reuse (or create) the generated repository here")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kloop-wiki-scale-") as tmp:
        repo = args.repo or Path(tmp) / "scale-repo"
        if not (repo / ".git").exists():
            started = time.perf_counter()
            build_scale_repo(repo, args.commits)
            print(f"generated {args.commits} commits with git fast-import in {time.perf_counter() - started:.1f}s")
        store = WikiStore(Path(tmp) / "wiki.sqlite")
        before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        report = GitIngester(store).ingest(repo, repo="scale")
        after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before, strict=True))
        print(f"ingest: {report.commits_seen} commits read, {report.entries_added} entries, "
              f"{report.skipped_non_kernel} non-kernel skipped in {report.seconds:.1f}s wall "
              f"= {report.commits_per_s:,.0f} commits/s; {cpu_s:.1f} CPU-s (kloop + git) "
              f"= {report.commits_seen / cpu_s:,.0f} commits per CPU-second")
        again = GitIngester(store).ingest(repo, repo="scale")
        print(f"incremental re-run: {again.commits_seen} commits read, {again.entries_added} added in {again.seconds:.2f}s")
        rng = random.Random(5)
        latencies, cpu = [], []
        for _ in range(args.queries):
            query, filters = rng.choice(QUERIES), rng.choice(FILTERS)
            started, started_cpu = time.perf_counter(), time.process_time()
            store.search(query, k=10, **filters)
            latencies.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        print(f"search over {store.count():,} entries ({args.queries} queries, k=10): "
              f"wall p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms, "
              f"max {max(latencies):.1f} ms; CPU p50 {statistics.median(cpu):.1f} ms, p95 {percentile(cpu, 0.95):.1f} ms")
        size = sum(f.stat().st_size for f in Path(tmp).glob("wiki.sqlite*"))
        print(f"database: {size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
