"""GitIngester against real repositories built here: merges, renames, binaries, odd bytes, scale."""

from __future__ import annotations

import pytest

from kloop.errors import BadInput
from kloop.wiki.git_ingest import IDENTIFIER_CHARS, IDENTIFIER_PREFIX, GitIngester
from kloop.wiki.store import WikiStore

APACHE = "                                 Apache License\n                           Version 2.0, January 2004\n"
MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def test_commit_becomes_entry_with_provenance(repo, store: WikiStore) -> None:
    repo.write("LICENSE", APACHE)
    repo.git("remote", "add", "origin", "git@github.com:NVIDIA/cutlass.git")
    sha = repo.commit(
        "[Hopper] Use TMA multicast for B tiles in grouped GEMM (#1234)\n\nCuts L2 traffic on H100.",
        {"include/cutlass/gemm/kernel/sm90_gemm_tma.hpp": "// tma multicast\nint x;\n"},
        date="2024-05-01T10:00:00+00:00",
    )
    report = GitIngester(store).ingest(repo.path, repo="cutlass")
    assert (report.commits_seen, report.entries_added) == (1, 1)
    entry = store.get(f"cutlass@{sha[:12]}")
    assert entry is not None
    assert entry.kind.value == "pr" and entry.source.pr == 1234
    assert entry.source.url == "https://github.com/NVIDIA/cutlass/pull/1234"
    assert entry.source.commit == sha and entry.source.license == "Apache-2.0"
    assert entry.source.paths == ["include/cutlass/gemm/kernel/sm90_gemm_tma.hpp"]
    assert entry.source.date.startswith("2024-05-01")
    assert entry.vendor.value == "nvidia" and entry.arch == ["sm_90"]
    assert {"tma-multicast", "grouped-gemm"} <= set(entry.techniques)
    assert "+int x;" in entry.excerpt
    # line counts cover the kernel source diff (the licence file is not kernel code)
    assert (entry.stats["files"], entry.stats["kernel_files"], entry.stats["added"]) == (2, 1, 2)
    assert entry.stats["added_files"] == 1


def test_commit_url_without_pr_and_gitlab_remote(repo, store: WikiStore) -> None:
    repo.write("LICENSE", MIT)
    repo.git("remote", "add", "origin", "https://gitlab.com/group/kern.git")
    sha = repo.commit("Vectorize the softmax kernel loads", {"kernels/softmax.cu": "v4\n"})
    GitIngester(store).ingest(repo.path)
    entry = store.get(f"kernels-repo@{sha[:12]}")
    assert entry.kind.value == "commit" and entry.source.pr is None
    assert entry.source.url == f"https://gitlab.com/group/kern/-/commit/{sha}"
    assert entry.source.license == "MIT"


def test_merge_pull_request_takes_title_from_body(repo, store: WikiStore) -> None:
    repo.commit("base", {"csrc/attn.cu": "a\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Add split-KV decode path", {"csrc/attn.cu": "a\nb\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("unrelated kernel tweak", {"csrc/norm.cu": "n\n"})
    repo.git("merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #77 from dev/splitkv\n\n[ROCm] Flash decoding with split KV on MI300X")
    merge = repo.git("rev-parse", "HEAD")
    GitIngester(store).ingest(repo.path, repo="aiter")
    entry = store.get(f"aiter@{merge[:12]}")
    assert entry.kind.value == "pr" and entry.source.pr == 77
    assert entry.title == "[ROCm] Flash decoding with split KV on MI300X"
    assert entry.source.paths == ["csrc/attn.cu"]  # diffed against the first parent
    assert entry.vendor.value == "amd" and "gfx942" in entry.arch
    assert "+b" in entry.excerpt
    assert store.count() == 4


def test_rename_binary_and_non_kernel_files(repo, store: WikiStore) -> None:
    repo.commit("add kernel", {"csrc/old name.cu": "x\n"})
    sha = repo.commit("move kernel and add weights", {"weights.bin": bytes(range(256)) * 4})
    repo.git("mv", "csrc/old name.cu", "csrc/new name.cu")
    renamed = repo.commit("Rename gemm kernel file")
    docs = repo.commit("Fix typo in README", {"README.md": "hello\n"})
    report = GitIngester(store).ingest(repo.path, repo="r")
    assert report.skipped_non_kernel == 2  # the binary-only and the docs-only commits
    assert store.get(f"r@{sha[:12]}") is None and store.get(f"r@{docs[:12]}") is None
    entry = store.get(f"r@{renamed[:12]}")
    assert entry.source.paths == ["csrc/new name.cu"]


def test_non_utf8_and_empty_messages(repo, store: WikiStore) -> None:
    latin = repo.commit(b"Optimiser le noyau \xe9l\xe9mentaire (#9)\n", {"kernels/a.cu": "1\n"})
    empty = repo.commit(b"", {"kernels/b.cu": "2\n"})
    report = GitIngester(store).ingest(repo.path, repo="r")
    assert report.entries_added == 2
    assert store.get(f"r@{latin[:12]}").source.pr == 9
    assert store.get(f"r@{latin[:12]}").title.startswith("Optimiser le noyau ")  # decoded, never fatal
    assert store.get(f"r@{empty[:12]}").title == "(empty commit message)"


def test_huge_diff_excerpt_is_bounded(repo, store: WikiStore) -> None:
    long = "".join(f"float v{i} = {i}.0f;\n" for i in range(2_500))  # ~50 kB: diffed, excerpt capped
    sha = repo.commit("Long lookup table kernel", {"kernels/table.cu": long})
    huge = "".join(f"float w{i} = {i}.0f;\n" for i in range(60_000))  # > 64 kB: diffed as binary
    big = repo.commit("Generate huge lookup table kernel", {"kernels/huge.cu": huge})
    GitIngester(store, excerpt_chars=800).ingest(repo.path, repo="r")
    entry = store.get(f"r@{sha[:12]}")
    diff, _, names = entry.excerpt.partition(IDENTIFIER_PREFIX)
    assert 0 < len(diff) <= 800
    assert "float" in names.split() and len(names) <= IDENTIFIER_CHARS  # the names it adds, bounded too
    assert entry.stats["added"] == 2_500
    generated = store.get(f"r@{big[:12]}")
    assert "float" not in generated.excerpt and generated.stats["added"] == 0
    assert generated.source.paths == ["kernels/huge.cu"]


def test_incremental_adds_only_new_commits(repo, store: WikiStore) -> None:
    repo.commit("first kernel", {"kernels/a.cu": "1\n"})
    ingester = GitIngester(store)
    assert ingester.ingest(repo.path, repo="r").entries_added == 1
    again = ingester.ingest(repo.path, repo="r")
    assert (again.commits_seen, again.entries_added) == (0, 0)
    repo.commit("second kernel", {"kernels/b.cu": "2\n"})
    third = ingester.ingest(repo.path, repo="r")
    assert (third.commits_seen, third.entries_added) == (1, 1)
    assert store.count() == 2


def test_rewritten_history_rereads_and_dedupes(repo, store: WikiStore) -> None:
    repo.commit("one", {"kernels/a.cu": "1\n"})
    repo.commit("two", {"kernels/a.cu": "2\n"})
    GitIngester(store).ingest(repo.path, repo="r")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.commit("two, rewritten", {"kernels/a.cu": "3\n"})
    report = GitIngester(store).ingest(repo.path, repo="r")
    assert report.commits_seen == 2 and report.skipped_known == 1 and report.entries_added == 1
    assert store.count() == 3


def test_paths_and_since_filters(repo, store: WikiStore) -> None:
    repo.commit("old attention change", {"csrc/attention/a.cu": "1\n"}, date="2020-01-01T00:00:00+00:00")
    repo.commit("new attention change", {"csrc/attention/a.cu": "2\n"}, date="2024-01-01T00:00:00+00:00")
    repo.commit("new gemm change", {"csrc/gemm/g.cu": "3\n"}, date="2024-02-01T00:00:00+00:00")
    report = GitIngester(store).ingest(repo.path, repo="r", since="2023-01-01", paths=["csrc/attention/**"])
    assert report.entries_added == 1
    [hit] = store.search("attention change", k=5)
    assert hit.title == "new attention change"


def test_empty_repository_and_bad_inputs(repo, store: WikiStore, tmp_path) -> None:
    assert GitIngester(store).ingest(repo.path).commits_seen == 0
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(BadInput, match="not a git repository"):
        GitIngester(store).ingest(plain)
    with pytest.raises(BadInput, match="no such directory"):
        GitIngester(store).ingest(tmp_path / "missing")
    with pytest.raises(BadInput, match="--since"):
        GitIngester(store).ingest(repo.path, since="last tuesday")
    with pytest.raises(BadInput, match="--repo"):
        GitIngester(store).ingest(repo.path, repo="has space")


def test_bare_clone_is_ingested(repo, store: WikiStore, tmp_path) -> None:
    sha = repo.commit("[CK] Add ds_read_b128 path for gfx942 GEMM", {"include/ck/gemm.hpp": "x\n"})
    bare = tmp_path / "ck.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(bare))
    GitIngester(store).ingest(bare)
    entry = store.get(f"ck@{sha[:12]}")
    assert entry.vendor.value == "amd" and "ds-read-b128" in entry.techniques


def test_odd_path_names_survive(repo, store: WikiStore) -> None:
    names = ["kernels/tab\there.cu", "kernels/new\nline.cu", "kernels/ünï cödé.cu"]
    sha = repo.commit("Add oddly named kernels", dict.fromkeys(names, "x\n"))
    GitIngester(store).ingest(repo.path, repo="r")
    assert sorted(store.get(f"r@{sha[:12]}").source.paths) == sorted(names)
