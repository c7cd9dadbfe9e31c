"""KernelWiki on real repository history: recall@1 / recall@5 per repository against `git log --grep`.

    .venv/bin/python bench/wiki_real.py [--mirrors DIR] [--db PATH] [--rebuild] [--split tune|held|fresh|fresh2|fresh3|all]
                                        [--misses] [--ablate] [--json OUT]
    .venv/bin/python bench/wiki_real.py --speed      # git's passes side by side, then a whole ingest

Questions and method: bench/wiki_real/README.md. The wiki is built the way a user builds it:
`kloop wiki build --preset amd|nvidia` over a folder of clones (here the `fetch` mirrors), plus
kloop's shipped cards. A question is answered at k when one of its ground-truth commits is among
the top k hits. The baseline runs `git log -i --all-match --grep=W...` over the question's content
words (newest first), falling back to any-word matching when no commit has them all.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.build import build_preset
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.presets import find_clones
from kloop.wiki.provenance import KernelPathRules
from kloop.wiki.query import STOPWORDS
from kloop.wiki.store import WikiStore
from kloop.wiki.topics import build_topics

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "wiki_real" / "questions.jsonl"
QUESTION_WORDS = frozenset(["commit", "commits", "added", "add", "introduced", "introduce", "first", "land", "landed"])


def load_questions(split: str) -> list[dict]:
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


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


def kloop_ranks(store: WikiStore, questions: list[dict], k: int = 5) -> list[int | None]:
    return [rank_of(q["truth"], [h.source.commit for h in store.search(q["question"], k=k)]) for q in questions]


def summarize(questions: list[dict], ranks: list[int | None]) -> dict[str, dict[str, float]]:
    """recall@1 and recall@5 per repository, per vendor and overall."""
    groups: dict[str, list[int | None]] = defaultdict(list)
    for q, r in zip(questions, ranks, strict=True):
        for key in (q["repo"], f"vendor:{q['vendor']}", "all"):
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


def print_table(title: str, baseline: dict, kloop: dict) -> None:
    print(f"\n{title}")
    print(f"{'group':28} {'n':>3}  {'grep r@1':>8} {'grep r@5':>8}  {'kloop r@1':>9} {'kloop r@5':>9}")
    for key in sorted(kloop, key=lambda k: (k == "all", k.startswith("vendor:"), k)):
        b, s = baseline[key], kloop[key]
        print(f"{key:28} {s['n']:>3}  {b['r@1']:>8.3f} {b['r@5']:>8.3f}  {s['r@1']:>9.3f} {s['r@5']:>9.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of clones")
    parser.add_argument("--db", type=Path, default=Path("/tmp/wiki_real.sqlite"))
    parser.add_argument("--rebuild", action="store_true", help="delete the database and ingest again")
    parser.add_argument("--split", choices=("tune", "held", "fresh", "fresh2", "fresh3", "all"), default="all")
    parser.add_argument("--misses", action="store_true", help="print the questions missed at 5")
    parser.add_argument("--ablate", action="store_true", help="measure each alias row that fires")
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
    with WikiStore(args.db) as store:
        for split in (["tune", "held", "fresh", "fresh2", "fresh3"] if args.split == "all" else []) + [args.split]:
            qs = [q for q in load_questions(split) if q["repo"] in clones]
            ranks = kloop_ranks(store, qs)
            grep = [rank_of(q["truth"], grep_baseline(clones[q["repo"]], q["question"])) for q in qs]
            base, ours = summarize(qs, grep), summarize(qs, ranks)
            result["splits"][split] = {"grep": base, "kloop": ours}
            print_table(f"split={split} ({len(qs)} questions)", base, ours)
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
    if ingest:
        print("\ningest:", json.dumps(ingest, indent=1))
    print(f"\n{time.perf_counter() - started:.1f}s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
