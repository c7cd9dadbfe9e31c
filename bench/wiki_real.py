"""KernelWiki on real repository history: recall@1 / recall@5 per repository against `git log --grep`.

    .venv/bin/python bench/wiki_real.py [--mirrors DIR] [--db PATH] [--rebuild] [--split tune|...|fresh5|train|styled|all] [--hand]
                                        [--misses] [--ablate] [--semantic] [--json OUT]
    .venv/bin/python bench/wiki_real.py --speed      # git's passes side by side, then a whole ingest

Questions and method: bench/wiki_real/README.md. The wiki is built the way a user builds it:
`kloop wiki build --preset amd|nvidia` over a folder of clones (here the `fetch` mirrors), plus
kloop's shipped cards. A question is answered at k when one of its ground-truth commits is among
the top k hits. The baseline runs `git log -i --all-match --grep=W...` over the question's content
words (newest first), falling back to any-word matching when no commit has them all.
`--semantic` also scores every question through the path `kloop wiki search --semantic` takes
(`SemanticReranker`: the bundled all-MiniLM-L6-v2 re-ranking BM25's top 30), with its latency.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.build import build_preset
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.presets import find_clones
from kloop.wiki.provenance import KernelPathRules
from kloop.wiki.query import STOPWORDS
from kloop.wiki.schema import Hit
from kloop.wiki.store import WikiStore
from kloop.wiki.topics import build_topics

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "wiki_real" / "questions.jsonl"
Search = Callable[[str], list[Hit]]
Times = dict[str, tuple[float, float]]  # question id -> (wall ms, CPU ms) of one search
SPLITS = ("tune", "held", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9", "fresh10", "fresh11", "fresh12",
          "fresh13", "fresh14", "fresh15", "fresh16", "fresh17", "fresh18", "fresh19", "fresh20", "fresh21")
# Scored once at the end by the lead; never opened for `train` or any other split.
BLIND = ("fresh20", "fresh21")
# Unions: `train` is every split but the blind ones; `styled` the spent four-style sets (symptom, technique,
# how-to, keyword).
UNIONS = {"train": tuple(s for s in SPLITS if s not in BLIND), "styled": ("fresh13", "fresh14", "fresh15", "fresh16")}
QUESTION_WORDS = frozenset(["commit", "commits", "added", "add", "introduced", "introduce", "first", "land", "landed"])


def load_questions(split: str) -> list[dict]:
    """questions.jsonl, and each later set kept in its own file (fresh13.jsonl: four styles, frozen apart).

    A union (`train`, `styled`) reads only its members' files: a blind set's file is not even opened.
    """
    members = UNIONS.get(split, (split,))
    files = [QUESTIONS, *sorted(QUESTIONS.parent.glob("fresh*.jsonl"))]
    if split != "all":
        files = [QUESTIONS, *(path for path in files[1:] if path.stem in members)]
    rows = [json.loads(line) for path in files for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] in members]


def build(db: Path, mirrors: Path, rebuild: bool) -> dict[str, dict]:
    """`kloop wiki build` for both presets over the mirrors (topic pages included); per-repo reports."""
    if rebuild and db.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    reports: dict[str, dict] = {}
    with WikiStore(db) as store:
        for preset in ("amd", "nvidia"):
            for report in build_preset(store, mirrors, preset):
                reports[report.repo] = {
                    "commits": report.commits_seen, "entries": report.entries_added,
                    "seconds": round(report.seconds, 2), "commits_per_s": round(report.commits_per_s, 1),
                    "unreadable": report.skipped_unreadable,
                }
        reports["topics"] = {"pages": len(build_topics(store))}  # as `kloop wiki build` does
    return reports


def _timed(cmd: list[str], stdin: bytes | None = None) -> tuple[float, float, int]:
    """(wall s, child CPU s, stdout bytes) of one git command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, check=False).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(time.perf_counter() - started, 2), round(cpu, 2), len(out)


def speed(mirror: Path, db: Path) -> dict[str, object]:
    """How git is driven, side by side on one history: the old passes against the new, then a whole ingest."""
    git = ["git", "-C", str(mirror)]
    fmt = "--format=%x1e%H%x1f%P%x1f%aI%x1f%an%x1f%B%x1f"
    shas = subprocess.run([*git, "rev-list", "HEAD"], capture_output=True, text=True, check=True).stdout.split()
    stdin = "".join(f"{s}\n" for s in shas).encode()
    sources = KernelPathRules().diff_pathspecs()
    passes = {
        "log --numstat -M (before)": [*git, "log", "-z", fmt, "--numstat", "-M", "--diff-merges=first-parent", "HEAD"],
        "log --raw --no-renames (now)": [*git, "log", "-z", fmt, "--raw", "--no-renames", "--diff-merges=first-parent", "HEAD"],
        "diff-tree -p every commit (before)": [*git, "diff-tree", "--stdin", "--root", "-p", "-U0", "-M", "--", *sources],
    }
    out: dict[str, object] = {"commits": len(shas)}
    for name, cmd in passes.items():
        wall, cpu, size = _timed(cmd, stdin if "diff-tree" in name else None)
        out[name] = {"wall_s": wall, "git_cpu_s": cpu, "mb": round(size / 1e6, 1)}
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    with WikiStore(db, seed_cards=False) as store:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu0 = time.process_time()
        report = GitIngester(store).ingest(mirror, repo="flashinfer-ai/flashinfer")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    git_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu = time.process_time() - cpu0 + git_cpu
    out["kloop ingest (now: --raw log, excerpts for commits with <= 8 kernel files, files > 64 kB as binary)"] = {
        "commits": report.commits_seen, "entries": report.entries_added, "wall_s": round(report.seconds, 2),
        "commits_per_s": round(report.commits_per_s), "cpu_s": round(cpu, 2), "git_cpu_s": round(git_cpu, 2),
        "commits_per_cpu_s": round(report.commits_seen / cpu) if cpu else None,
    }
    out["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
    return out


def rank_of(truth: list[str], commits: list[str | None]) -> int | None:
    """1-based rank of the first hit whose commit is a ground-truth commit."""
    for i, sha in enumerate(commits, 1):
        if sha and any(sha.startswith(t) or t.startswith(sha) for t in truth):
            return i
    return None


def grep_baseline(mirror: Path, question: str, k: int = 5) -> list[str]:
    """`git log --grep` over the question's content words, as a user without kloop would search."""
    words = [w for w in tokens_of(question) if w not in STOPWORDS and w not in QUESTION_WORDS and len(w) > 1]
    base = ["git", "-C", str(mirror), "log", "-i", "--format=%H", f"-{k}", "HEAD"]
    for extra in (["--all-match"], []):
        out = subprocess.run([*base, *extra, *(f"--grep={w}" for w in words)], capture_output=True, text=True)
        shas = out.stdout.split()
        if shas:
            return shas
    return []


def ranks_through(search: Search, questions: list[dict], times: Times | None = None) -> list[int | None]:
    """Each question's rank through `search`; each search's wall and CPU milliseconds into `times`."""
    ranks = []
    for q in questions:
        wall, cpu = time.perf_counter(), time.process_time()
        hits = search(q["question"])
        if times is not None:
            times[q["id"]] = ((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3)
        ranks.append(rank_of(q["truth"], [h.source.commit for h in hits]))
    return ranks


def kloop_ranks(store: WikiStore, questions: list[dict], k: int = 5, times: Times | None = None) -> list[int | None]:
    """`kloop wiki search QUESTION` (BM25 with aliases, no filters)."""
    return ranks_through(lambda text: store.search(text, k=k), questions, times)


def semantic_search(store: WikiStore, k: int = 5) -> tuple[Search, dict[str, float]]:
    """`kloop wiki search --semantic`'s path, and the model's load time (import included).

    The model is loaded once; each query gets a reranker with an empty embedding cache, as each
    CLI call starts with one (its candidates are embedded anew).
    """
    from kloop.wiki.semantic import SemanticReranker

    wall, cpu = time.perf_counter(), time.process_time()
    model = SemanticReranker.load().model
    load = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2)}
    return (lambda text: SemanticReranker(model).search(store, text, k=k)), load


def nearest_rank(values: list[float], share: float) -> float:
    """The value at `share` of the sorted values (nearest-rank percentile)."""
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(len(ordered) * share) - 1)], 1)


def latency(times: Times) -> dict[str, float]:
    """p50 / p95 of the searches' wall and CPU milliseconds."""
    walls, cpus = [w for w, _ in times.values()], [c for _, c in times.values()]
    return {"n": len(times), "wall_ms_p50": nearest_rank(walls, 0.5), "wall_ms_p95": nearest_rank(walls, 0.95),
            "cpu_ms_p50": nearest_rank(cpus, 0.5), "cpu_ms_p95": nearest_rank(cpus, 0.95)}


def summarize(questions: list[dict], ranks: list[int | None]) -> dict[str, dict[str, float]]:
    """recall@1 and recall@5 per repository, per vendor, per style (where a set writes one) and overall."""
    groups: dict[str, list[int | None]] = defaultdict(list)
    for q, r in zip(questions, ranks, strict=True):
        styles = (f"style:{q['style']}",) if q.get("style") else ()
        styles += ("style:no-title-words",) if q.get("no_title_words") else ()
        for key in (q["repo"], f"vendor:{q['vendor']}", *styles, "all"):
            groups[key].append(r)
    return {
        key: {"n": len(rs), "r@1": round(sum(r == 1 for r in rs) / len(rs), 3),
              "r@5": round(sum(r is not None and r <= 5 for r in rs) / len(rs), 3)}
        for key, rs in groups.items()
    }


def ablate(store: WikiStore, questions: list[dict], base: dict) -> list[dict]:
    """Each alias row that fires on some question, switched off in turn: its effect on recall."""
    table = store.aliases
    fired = sorted({i for q in questions for i in _rows_fired(table, q["question"])})
    out = []
    for index in fired:
        rows = [r.model_copy(update={"expand": False}) if i == index else r for i, r in enumerate(table.rows)]
        store._search.aliases = _table_with(table, rows)
        score = summarize(questions, kloop_ranks(store, questions))["all"]
        out.append({"alias": table.rows[index].canonical, "r@1_without": score["r@1"], "r@5_without": score["r@5"],
                    "r@1_delta_of_keeping": round(base["r@1"] - score["r@1"], 3),
                    "r@5_delta_of_keeping": round(base["r@5"] - score["r@5"], 3)})
    store._search.aliases = table
    return out


def _rows_fired(table: AliasTable, question: str) -> set[int]:
    return {i for _, _, i in table._expander.scan(tokens_of(question))}


def _table_with(table: AliasTable, rows: list) -> AliasTable:
    from kloop.wiki.aliases import AliasFile

    return AliasTable(AliasFile(repos=dict(table.repo_vendor), aliases=rows))


def print_table(title: str, baseline: dict, kloop: dict, semantic: dict | None = None) -> None:
    print(f"\n{title}")
    extra = f"  {'sem r@1':>8} {'sem r@5':>8}" if semantic else ""
    print(f"{'group':28} {'n':>3}  {'grep r@1':>8} {'grep r@5':>8}  {'kloop r@1':>9} {'kloop r@5':>9}{extra}")
    for key in sorted(kloop, key=lambda k: (k == "all", k.startswith("vendor:"), k.startswith("style:"), k)):
        b, s = baseline[key], kloop[key]
        extra = f"  {semantic[key]['r@1']:>8.3f} {semantic[key]['r@5']:>8.3f}" if semantic else ""
        print(f"{key:28} {s['n']:>3}  {b['r@1']:>8.3f} {b['r@5']:>8.3f}  {s['r@1']:>9.3f} {s['r@5']:>9.3f}{extra}")


def score_split(store: WikiStore, qs: list[dict], clones: dict[str, Path],
                semantic: Search | None, times: dict[str, Times]) -> tuple[dict, list[int | None]]:
    """grep, kloop (and --semantic) recall of one split; per-question latency into `times`."""
    ranks = kloop_ranks(store, qs, times=times["bm25"])
    grep = [rank_of(q["truth"], grep_baseline(clones[q["repo"]], q["question"])) for q in qs]
    scores = {"grep": summarize(qs, grep), "kloop": summarize(qs, ranks)}
    if semantic is not None:
        scores["semantic"] = summarize(qs, ranks_through(semantic, qs, times["semantic"]))
    return scores, ranks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of clones")
    parser.add_argument("--db", type=Path, default=Path("/tmp/wiki_real.sqlite"))
    parser.add_argument("--rebuild", action="store_true", help="delete the database and ingest again")
    parser.add_argument("--split", choices=(*SPLITS, *UNIONS, "all"), default="all")
    parser.add_argument("--hand", action="store_true",
                        help="weigh history questions by the hand-set factors instead of the shipped ranker")
    parser.add_argument("--misses", action="store_true", help="print the questions missed at 5")
    parser.add_argument("--ablate", action="store_true", help="measure each alias row that fires")
    parser.add_argument("--semantic", action="store_true",
                        help="also score through `kloop wiki search --semantic` (needs kloop[semantic]), with latency")
    parser.add_argument("--json", type=Path, help="write all numbers here")
    parser.add_argument("--speed", action="store_true", help="time git's passes and a whole ingest of flashinfer")
    args = parser.parse_args()
    if args.speed:
        numbers = speed(args.mirrors / "flashinfer-ai+flashinfer" / "repo", args.db.with_suffix(".speed.sqlite"))
        print(json.dumps(numbers, indent=1))
        if args.json:
            args.json.write_text(json.dumps(numbers, indent=1))
        return 0
    started = time.perf_counter()
    ingest = build(args.db, args.mirrors, args.rebuild) if args.rebuild or not args.db.exists() else {}
    clones = {repo.name: path for preset in ("amd", "nvidia") for repo, path in find_clones(args.mirrors, preset)}
    result: dict[str, object] = {"ingest": ingest, "splits": {}}
    times: dict[str, Times] = {"bm25": {}, "semantic": {}}
    with WikiStore(args.db) as store:
        semantic = None
        if args.semantic:
            semantic, result["semantic_load"] = semantic_search(store)
            print(f"semantic model loaded in {result['semantic_load']['wall_s']} s wall")
        if args.hand:
            store.use_ranker(None)
        for split in (list(SPLITS) if args.split == "all" else []) + [args.split]:
            qs = [q for q in load_questions(split) if q["repo"] in clones]
            scores, ranks = score_split(store, qs, clones, semantic, times)
            result["splits"][split] = scores
            print_table(f"split={split} ({len(qs)} questions)", scores["grep"], scores["kloop"], scores.get("semantic"))
            if args.misses and split == args.split:
                for q, r in zip(qs, ranks, strict=True):
                    if r != 1:
                        top = [f"{h.id} {h.title[:50]}" for h in store.search(q["question"], k=3)]
                        print(f"  rank {r}: {q['id']} {q['question']}\n     want {q['truth'][0][:10]} {q['truth_subject'][:60]}")
                        print("     got  " + "\n          ".join(top))
        if args.ablate:
            qs = [q for q in load_questions("tune") if q["repo"] in clones]
            base = summarize(qs, kloop_ranks(store, qs))["all"]
            result["ablation"] = ablate(store, qs, base)
            print("\nalias ablation on the tune split (delta = recall with the row minus without):")
            for row in result["ablation"]:
                print(f"  {row['alias']:24} r@1 {row['r@1_delta_of_keeping']:+.3f}  r@5 {row['r@5_delta_of_keeping']:+.3f}")
    result["latency_ms"] = {mode: latency(t) for mode, t in times.items() if t}
    print("\nper-search latency (ms):", json.dumps(result["latency_ms"]))
    if ingest:
        print("\ningest:", json.dumps(ingest, indent=1))
    print(f"\n{time.perf_counter() - started:.1f}s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
