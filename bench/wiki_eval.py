"""KernelWiki retrieval evaluation: recall@1 and recall@5 over a generated corpus plus the cards.

    .venv/bin/python bench/wiki_eval.py [--corpus DIR] [--fillers N] [--semantic] [--misses]

Builds the synthetic histories of bench/wiki_corpus/generate.py (one real git repository per
upstream style, landmark PRs among fillers), ingests them and kloop's shipped cards into a fresh
wiki, then asks bench/wiki_corpus/questions.jsonl (landmark PRs, worded differently),
questions_cards.jsonl (cards) and questions_aliases.jsonl (landmark PRs asked with the alias
table's other spellings: "warp group MMA" for wgmma, "local data share" for LDS; it measures
what alias expansion is for).
recall@k = mean over questions of the fraction of expected entries found in the top k.
Modes: plain BM25, BM25 + alias expansion, and + semantic re-ranking when available.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "wiki_corpus"))

from generate import REPOS, build_eval_corpus  # noqa: E402

from kloop.wiki.git_ingest import GitIngester  # noqa: E402
from kloop.wiki.store import WikiStore  # noqa: E402


def load_questions(manifest: dict[str, str]) -> dict[str, list[tuple[str, list[str]]]]:
    """Question sets by name; expected ids resolved (landmark:KEY -> repo@sha, bare card id -> card/ID)."""
    sets: dict[str, list[tuple[str, list[str]]]] = {}
    for name in ("questions.jsonl", "questions_cards.jsonl", "questions_aliases.jsonl"):
        path = ROOT / "wiki_corpus" / name
        if not path.exists():
            continue
        rows = []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            expected = []
            for ref in item["expected"]:
                if ref.startswith("landmark:"):
                    expected.append(manifest[ref.removeprefix("landmark:")])
                else:
                    expected.append(ref if ref.startswith("card/") else f"card/{ref}")
            rows.append((item["question"], expected))
        sets[name.removesuffix(".jsonl")] = rows
    return sets


def evaluate(store: WikiStore, rows: list[tuple[str, list[str]]], search) -> tuple[float, float, list[str]]:
    """(recall@1, recall@5, misses at 5) for one search function `search(question, kind)`.

    A question whose answers are all cards asks for guidance, so it is scored on the guidance list
    (kind "card", what `kloop wiki search` prints under "guidance"); the others on the ranked hits,
    where cards take at most one of the first five places."""
    r1 = r5 = 0.0
    misses = []
    for question, expected in rows:
        kind = "card" if all(ref.startswith("card/") for ref in expected) else None
        ids = [h.id for h in search(question, kind)]
        r1 += len(set(ids[:1]) & set(expected)) / min(len(expected), 1)
        found5 = len(set(ids[:5]) & set(expected)) / min(len(expected), 5)
        r5 += found5
        if found5 < 1:
            misses.append(f"{question!r}: expected {expected}, got {ids[:5]}")
    n = max(len(rows), 1)
    return r1 / n, r5 / n, misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="reuse (or create) the generated corpus here")
    parser.add_argument("--fillers", type=int, default=600, help="filler commits per repository")
    parser.add_argument("--semantic", action="store_true", help="also evaluate semantic re-ranking")
    parser.add_argument("--misses", action="store_true", help="print the questions missed at 5")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kloop-wiki-eval-") as tmp:
        corpus = args.corpus or Path(tmp) / "corpus"
        manifest_path = corpus / "manifest.json"
        started = time.perf_counter()
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text())
        else:
            manifest = build_eval_corpus(corpus, fillers_per_repo=args.fillers)
        built = time.perf_counter() - started
        store = WikiStore(Path(tmp) / "wiki.sqlite")  # a new wiki is seeded with the shipped cards
        commits = 0
        started = time.perf_counter()
        for repo in REPOS:
            commits += GitIngester(store).ingest(corpus / repo, repo=repo).commits_seen
        ingest_s = time.perf_counter() - started
        print(f"corpus: {commits} commits in {len(REPOS)} repositories (built {built:.1f}s, ingested {ingest_s:.1f}s); "
              f"{store.count()} entries, {store.count('card')} cards")
        modes = {
            "bm25": lambda q, kind: store.search(q, k=5, kind=kind, expand=False),
            "bm25+aliases": lambda q, kind: store.search(q, k=5, kind=kind),
        }
        if args.semantic:
            from kloop.wiki.semantic import SemanticReranker

            reranker = SemanticReranker.load()
            modes["bm25+aliases+semantic"] = lambda q, kind: reranker.search(store, q, k=5, kind=kind)
        sets = load_questions(manifest)
        all_rows = [row for rows in sets.values() for row in rows]
        print(f"{'mode':24} " + " ".join(f"{name + ' r@1':>22} {name + ' r@5':>22}" for name in [*sets, "all"]))
        for mode, search in modes.items():
            cells = []
            for rows in [*sets.values(), all_rows]:
                r1, r5, misses = evaluate(store, rows, search)
                cells.append(f"{r1:22.3f} {r5:22.3f}")
            print(f"{mode:24} " + " ".join(cells))
            if args.misses:
                for line in evaluate(store, all_rows, search)[2]:
                    print("   miss:", line)
        print(f"questions: {', '.join(f'{k}={len(v)}' for k, v in sets.items())}, total {len(all_rows)}")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
