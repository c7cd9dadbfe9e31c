"""Does the user's wording decide what KernelWiki finds? The training questions, re-worded mechanically.

    .venv/bin/python bench/wiki_phrasing.py [--db /tmp/wiki_real.sqlite] [--splits tune,held,...] [--json OUT]

Each history question of `bench/wiki_real/questions.jsonl` ("Which commit added quick allreduce to
aiter?") is also asked as its content words alone ("quick allreduce aiter"), as a how-to ("how do I
use quick allreduce in aiter") and as a symptom-like complaint ("quick allreduce in aiter is broken").
The re-wordings keep the subject and drop only the words that name the question, so the answer is the
same commit. Reported: recall@1 / @5 per wording, and the share of questions whose answer moves by
more than two places between the original and each re-wording. Only training splits are used by
default (tune..fresh9): the blind splits are not to be read for design.

Build the database first with `bench/wiki_real.py --rebuild` (it ingests the mirrors).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from wiki_real import load_questions, rank_of  # noqa: E402  (a sibling bench script)

from kloop.wiki.aliases import tokens_of  # noqa: E402
from kloop.wiki.intent import ACTIONS, HISTORY_ONLY, WH_WORDS  # noqa: E402
from kloop.wiki.query import STOPWORDS  # noqa: E402
from kloop.wiki.store import WikiStore  # noqa: E402

TRAINING = ("tune", "held", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9")
QUESTION_WORDS = HISTORY_ONLY | WH_WORDS | ACTIONS | {"did", "was", "were", "what", "how", "does", "do", "is"}


def subject(question: str) -> str:
    """The question's content words in order: what it is about, without the words that make it a question."""
    words = [w for w in tokens_of(question) if w not in STOPWORDS and w not in QUESTION_WORDS]
    return " ".join(words)


WORDINGS = {
    "original": lambda q: q,
    "keywords": subject,
    "how-to": lambda q: f"how do I use {subject(q)}",
    "symptom": lambda q: f"{subject(q)} is broken",
}


def moved(a: int | None, b: int | None, places: int = 2) -> bool:
    """The answer's rank changed by more than `places` (a miss at 50 counts as rank 51)."""
    return abs((a or 51) - (b or 51)) > places


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/wiki_real.sqlite"))
    parser.add_argument("--splits", default=",".join(TRAINING))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    splits = args.splits.split(",")
    questions = [q for split in splits for q in load_questions(split)]
    ranks: dict[str, list[int | None]] = {}
    with WikiStore(args.db) as store:
        for name, reword in WORDINGS.items():
            ranks[name] = [rank_of(q["truth"], [h.source.commit for h in store.search(reword(q["question"]), k=50)])
                           for q in questions]
    out: dict[str, dict] = {}
    n = len(questions)
    for name, rs in ranks.items():
        out[name] = {"n": n, "r@1": round(sum(r == 1 for r in rs) / n, 3),
                     "r@5": round(sum(r is not None and r <= 5 for r in rs) / n, 3)}
        if name != "original":
            out[name]["moved_>2_places"] = round(sum(moved(a, b) for a, b in zip(ranks["original"], rs, strict=True)) / n, 3)
    print(f"{'wording':10} {'n':>4} {'r@1':>6} {'r@5':>6} {'moved>2':>8}")
    for name, row in out.items():
        print(f"{name:10} {row['n']:>4} {row['r@1']:>6.3f} {row['r@5']:>6.3f} {row.get('moved_>2_places', 0):>8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"splits": splits, "wordings": out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
