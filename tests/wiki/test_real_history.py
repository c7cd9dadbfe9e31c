"""Ingest on histories that real repositories have: partial clones, broken objects, compiled kernels, mirrors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.store import WikiStore
from tests.wiki.conftest import GIT_ENV, GitRepo


def _three_kernels(repo: GitRepo) -> list[str]:
    return [
        repo.commit("Add split-k GEMM kernel", {"csrc/gemm.cu": "// v1\nint k = 1;\n"}),
        repo.commit("Tune the MFMA tile of the GEMM kernel", {"csrc/gemm.cu": "// v2\nint k = 2;\n"}),
        repo.commit("Add paged attention decode kernel", {"csrc/pa.cu": "// pa\nint p = 3;\n"}),
    ]


def test_partial_clone_without_blobs_keeps_every_commit(repo: GitRepo, tmp_path: Path, store: WikiStore) -> None:
    shas = _three_kernels(repo)
    repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    subprocess.run(["git", "clone", "-q", "--no-checkout", "--filter=blob:none", f"file://{repo.path}", str(clone)],
                   env=GIT_ENV, check=True, capture_output=True)
    repo.path.rename(tmp_path / "origin-gone")  # the promisor remote is unreachable: no blob can be fetched
    report = GitIngester(store).ingest(clone, repo="ROCm/aiter")
    assert (report.commits_seen, report.entries_added, report.skipped_unreadable) == (3, 3, 0)
    entry = store.get(f"ROCm/aiter@{shas[0][:12]}")
    assert entry.source.paths == ["csrc/gemm.cu"] and entry.stats["added_files"] == 1
    assert "int k" not in entry.excerpt  # the blob is not here: paths and message only


def test_missing_tree_keeps_the_message_and_reads_on(repo: GitRepo, store: WikiStore) -> None:
    shas = _three_kernels(repo)
    shas.append(repo.commit("Fix the decode kernel bounds", {"csrc/pa.cu": "// pa2\n"}))
    broken = repo.git("rev-parse", f"{shas[1]}^{{tree}}")
    csrc = next(line.split()[2] for line in repo.git("cat-file", "-p", broken).splitlines() if line.endswith("csrc"))
    (repo.path / ".git" / "objects" / csrc[:2] / csrc[2:]).unlink()  # a loose object lost, as in a broken mirror
    report = GitIngester(store).ingest(repo.path, repo="r")
    assert report.entries_added == 4 and report.diff_missing >= 1
    for sha in shas:
        assert store.get(f"r@{sha[:12]}") is not None
    assert store.get(f"r@{shas[1][:12]}").stats.get("diff_missing") == 1


def test_compiled_kernel_objects_count_and_tests_are_secondary(repo: GitRepo, store: WikiStore) -> None:
    co = repo.commit("Add fmha fwd v3 kernels for gfx942", {"hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co": b"\x7fELF\x00\x01"})
    only_tests = repo.commit("Cover more shapes", {"op_tests/test_gemm_kernel.py": "assert True\n"})
    fp8_test = repo.commit("Use the maximum FP8 E4M3 value", {"tests/test_core.py": "m = 448\n"})
    both = repo.commit("Fix gemm rounding", {"csrc/gemm.cu": "x\n", "tests/test_gemm.py": "y\n"})
    report = GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
    assert report.skipped_non_kernel == 1
    entry = store.get(f"ROCm/aiter@{co[:12]}")
    assert entry.source.paths == ["hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co"] and entry.stats["binary_files"] == 1
    assert store.get(f"ROCm/aiter@{only_tests[:12]}") is None  # tests alone, and a message naming no kernel work
    assert store.get(f"ROCm/aiter@{fp8_test[:12]}").source.paths == ["tests/test_core.py"]  # the message does
    fixed = store.get(f"ROCm/aiter@{both[:12]}")
    assert fixed.source.paths == ["csrc/gemm.cu"] and "tests: test_gemm" in fixed.path_terms
    assert store.search("fmha v3 fwd hd128", k=1)[0].id == entry.id  # named by its path


def test_url_from_repo_name_when_origin_is_a_local_mirror(repo: GitRepo, tmp_path: Path, store: WikiStore) -> None:
    repo.git("remote", "add", "origin", str(tmp_path / "mirrors" / "ROCm+aiter" / "repo"))
    sha = repo.commit("Add topk kernel (#1662)", {"csrc/topk.cu": "t\n"})
    plain = repo.commit("Tune topk", {"csrc/topk.cu": "t2\n"})
    GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
    assert store.get(f"ROCm/aiter@{sha[:12]}").source.url == "https://github.com/ROCm/aiter/pull/1662"
    assert store.get(f"ROCm/aiter@{plain[:12]}").source.url == f"https://github.com/ROCm/aiter/commit/{plain}"


def test_url_stays_empty_for_a_name_without_owner(repo: GitRepo, store: WikiStore) -> None:
    sha = repo.commit("Add kernel", {"csrc/k.cu": "k\n"})
    GitIngester(store).ingest(repo.path, repo="aiter")
    assert store.get(f"aiter@{sha[:12]}").source.url is None


def test_show_by_short_sha(repo: GitRepo, store: WikiStore) -> None:
    shas = _three_kernels(repo)
    GitIngester(store).ingest(repo.path, repo="ROCm/aiter")
    assert store.get(shas[2][:7]).id == f"ROCm/aiter@{shas[2][:12]}"
    assert store.get(f"ROCm/aiter@{shas[0][:9]}").source.commit == shas[0]
    assert store.get(shas[0].upper()[:10]).source.commit == shas[0]
    assert store.get("ROCm/aiter@deadbee") is None and store.get("nothex") is None


def test_ambiguous_short_sha_is_refused(store: WikiStore) -> None:
    from kloop.wiki.schema import Source, WikiEntry

    store.add([WikiEntry(id=f"r@abcdef1{c}0000", kind="commit", title=f"t{c}",
                         source=Source(repo="r", commit=f"abcdef1{c}" + "0" * 32)) for c in "ab"])
    with pytest.raises(BadInput, match="names 2 entries"):
        store.get("abcdef1")
    assert store.get("abcdef1b").title == "tb"


def test_history_question_prefers_the_commit_that_created_the_file(repo: GitRepo, tmp_path: Path) -> None:
    intro = repo.commit("Stream-K scheduler (#12)", {"include/gemm/tile_scheduler_stream_k.hpp": "// sk\n"})
    for i in range(3):
        repo.commit(f"Tune stream-K tile scheduler heuristics, round {i} (#{20 + i})",
                    {"include/gemm/tile_scheduler_stream_k.hpp": f"// sk {i}\n"})
    with WikiStore(tmp_path / "seeded.sqlite") as store:  # the shipped cards are there too
        GitIngester(store).ingest(repo.path, repo="NVIDIA/cutlass")
        hits = store.search("Which commit added the stream-K tile scheduler?", k=3)
        assert hits[0].id == f"NVIDIA/cutlass@{intro[:12]}"
        assert all(h.kind.value != "card" for h in hits)
        how_to = store.search("stream-k tile scheduler load balancing", k=10)
        assert any(h.kind.value == "card" for h in how_to)  # a how-to question may mix in cards
