"""The generated evaluation corpus: real fast-import repositories, and retrieval quality on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH / "wiki_corpus"))
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402
import wiki_eval  # noqa: E402

from kloop.wiki.git_ingest import GitIngester  # noqa: E402
from kloop.wiki.store import WikiStore  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[WikiStore, dict[str, str]]:
    root = tmp_path_factory.mktemp("corpus")
    manifest = generate.build_eval_corpus(root / "repos", fillers_per_repo=120)
    store = WikiStore(root / "wiki.sqlite")
    for repo in generate.REPOS:
        GitIngester(store).ingest(root / "repos" / repo, repo=repo)
    return store, manifest


def test_generated_history_is_a_real_repository(corpus, tmp_path: Path) -> None:
    store, manifest = corpus
    assert len(manifest) == len(generate.load_landmarks())
    repo_path = Path(store.clone_path("cutlass"))
    parents = subprocess.run(["git", "-C", str(repo_path), "log", "--merges", "--format=%H"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert parents, "the generator writes merge commits"
    entry = store.get(manifest["cutlass-tma-multicast"])
    assert entry.kind.value == "pr" and entry.source.pr == 1234 and entry.source.license == "BSD-3-Clause"
    assert entry.vendor.value == "nvidia" and "tma-multicast" in entry.techniques
    trap = store.search("Remove builds on legacy OSs from CI", k=5, kind="commit")
    assert all("legacy" not in h.title for h in trap)  # CI-only commits are not kernel knowledge


def test_recall_at_5_meets_target(corpus) -> None:
    store, manifest = corpus
    sets = wiki_eval.load_questions(manifest)
    rows = [row for rows in sets.values() for row in rows]
    assert len(sets["questions"]) >= 40
    _, recall5, misses = wiki_eval.evaluate(store, rows, lambda q, kind: store.search(q, k=5, kind=kind))
    assert recall5 >= 0.9, misses
