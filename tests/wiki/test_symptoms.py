"""A question in a user's words reaches the fix that shares none of them (symptoms.yaml).

"crashes with an illegal memory access once slot ids exceed about 4096" and "widen pool indices to
int64 to prevent int32 element-offset overflow" have no word in common: BM25 over the user's words
and their alias spellings never makes the fix a candidate. The symptom vocabulary adds the
mechanisms such fixes name (overflow, int64, terminate, deadlock ...) as a low-weight expansion.
"""

from __future__ import annotations

import pytest

from kloop.errors import BadInput
from kloop.wiki.aliases import tokens_of
from kloop.wiki.git_ingest import GitIngester
from kloop.wiki.query import STOPWORDS
from kloop.wiki.store import WikiStore
from kloop.wiki.symptoms import default_symptom_table, load_symptom_table
from tests.wiki.conftest import GitRepo

OVERFLOW_FIX = "widen pool indices to Int64 to prevent int32 element-offset overflow"
HANG_FIX = "terminate top-p search at adjacent float bounds"


def _history(repo: GitRepo) -> dict[str, str]:
    """A small kernel repository: two fixes in kernel words, and commits that share the user's words."""
    shas = {}
    repo.commit("add paged decode kernel", {"csrc/decode.cu": "__global__ void decode(float* out, int i) {\n  out[i] = 0;\n}\n"},
                date="2024-01-02T00:00:00+00:00")
    repo.commit("reduce memory traffic in the slot mapping copy",
                {"csrc/slot_copy.cu": "__global__ void slot_copy(int* ids) {\n  ids[threadIdx.x] += 1;\n}\n"},
                date="2024-02-02T00:00:00+00:00")
    repo.commit("access pattern cleanup for the sampling kernel",
                {"csrc/top_p.cu": "__global__ void sample(float* p) {\n  p[threadIdx.x] *= 2.f;\n}\n"},
                date="2024-03-02T00:00:00+00:00")
    shas["overflow"] = repo.commit(OVERFLOW_FIX, {"csrc/decode.cu": (
        "__global__ void decode(float* out, int i) {\n  int64_t pos = (int64_t)i * 128;\n  out[pos] = 0;\n}\n")},
        date="2024-04-02T00:00:00+00:00")
    shas["hang"] = repo.commit(HANG_FIX, {"csrc/top_p.cu": (
        "__global__ void sample(float* p) {\n  while (lo < hi && nextafterf(lo, hi) < hi) { lo = mid(lo, hi); }\n}\n")},
        date="2024-05-02T00:00:00+00:00")
    repo.commit("speed up the slot copy kernel",
                {"csrc/slot_copy.cu": "__global__ void slot_copy(int* ids) {\n  ids[threadIdx.x] += 2;\n}\n"},
                date="2024-06-02T00:00:00+00:00")
    return shas


QUESTIONS = {
    "overflow": "Generation crashes with an illegal memory access once slot ids exceed about 4096",
    "hang": "Generation spins forever for some probability cutoffs",
}


@pytest.mark.parametrize("case", sorted(QUESTIONS))
def test_a_symptom_reaches_the_fix_that_shares_no_word_with_it(repo: GitRepo, store: WikiStore, case: str) -> None:
    shas = _history(repo)
    GitIngester(store).ingest(repo.path, repo="kernels")
    question, sha = QUESTIONS[case], shas[case]
    entry = store.get(f"kernels@{sha[:12]}")
    assert entry is not None
    said = f"{entry.title} {entry.body} {entry.path_terms} {entry.added_terms} {entry.excerpt}"
    assert set(tokens_of(said)).isdisjoint(set(tokens_of(question)) - STOPWORDS)  # no word in common
    hits = [h.source.commit for h in store.search(question, k=5)]
    # among the first three of six commits, above the ones that share the user's words ("memory", "slot",
    # "access", "sampling") but fix nothing
    assert sha in hits[:3], (question, [h.title for h in store.search(question, k=5)])
    store._search.use_symptoms(None)  # the search before symptoms.yaml: the fix is not even a candidate
    assert sha not in [h.source.commit for h in store.search(question, k=100)]


def test_a_size_past_a_power_of_two_reads_as_the_large_size_symptom() -> None:
    table = default_symptom_table()
    fired = {text: [table.rows[i].canonical for i in table.fired(text)] for text in [
        "garbage once slot ids exceed about 4096", "fails beyond 2^31 elements", "over 65536 tokens",
        "prompts longer than four thousand entries", "with more than 2,000,000,000 values", "when n > 100000",
        "hidden size 4096 on H100", "tile 128x128 over 2 stages", "up to 64 experts",
    ]}
    assert all("large-size" in rows for text, rows in list(fired.items())[:6]), fired
    assert not any(list(fired.values())[6:]), fired  # a size that is no comparison, or a small one, reads as nothing


def test_a_keyword_question_is_not_expanded() -> None:
    table = default_symptom_table()
    assert table.expansions("tma multicast warp specialized gemm") == []
    assert "overflow" in table.expansions("illegal memory access for huge batches")
    assert "terminate" in table.expansions("sampling hangs")


def test_a_bad_symptom_file_is_one_line() -> None:
    with pytest.raises(BadInput, match="numbers.row 'nope' names no row"):
        load_symptom_table("numbers: {row: nope, min: 1, min_power: 1, after: [over]}\n"
                           "rows: [{canonical: a, why: w, symptoms: [x], mechanisms: [y]}]\n", "s.yaml")
    with pytest.raises(BadInput, match="why"):
        load_symptom_table("rows: [{canonical: a, symptoms: [x], mechanisms: [y]}]\n", "s.yaml")


def test_the_cached_parse_is_the_shipped_file(tmp_path, monkeypatch) -> None:
    """The shipped table read back from kloop's YAML cache (a search imports no YAML parser) is the file's."""
    from importlib import resources

    monkeypatch.setenv("KLOOP_HOME", str(tmp_path))
    text = resources.files("kloop.wiki").joinpath("symptoms.yaml").read_text(encoding="utf-8")
    first = load_symptom_table(text, "symptoms.yaml", cached=True)  # parses, writes the cache
    again = load_symptom_table(text, "symptoms.yaml", cached=True)  # reads it back
    fresh = load_symptom_table(text, "symptoms.yaml")
    assert list((tmp_path / "cache").glob("symptoms-*.json"))
    question = "garbage and NaN once slot ids exceed 4096, then it hangs"
    assert first.expansions(question) == again.expansions(question) == fresh.expansions(question)
    assert [r.model_dump() for r in again.rows] == [r.model_dump() for r in fresh.rows]


def _crowded_history(repo: GitRepo, decoys: int) -> str:
    """More tuning commits in the question's own words than a search pool holds, among as many unrelated ones (so
    those words still weigh), and one fix that spells fewer of them and none of the mechanisms a wrong number
    points to: BM25 ranks the fix below every tuning commit."""
    for n in range(2 * decoys):
        words = "speed up block scatter kernel for long prompts" if n % 2 else "retune gemm tiles for small batches"
        repo.commit(f"{words}, variant {n}",
                    {f"csrc/k_{n}.cu": f"__global__ void k_{n}(float* out) {{\n  out[{n}] = 1;\n}}\n"},
                    date=f"2024-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00")
    return repo.commit("fix: block scatter kernel reads the last page twice",
                       {"csrc/k_1.cu": "__global__ void k_1(float* out) {\n  out[1] = 2;\n}\n"},
                       date="2024-02-01T00:00:00+00:00")


def test_a_symptom_question_weighs_the_fixes_bm25_would_leave_out(repo: GitRepo, store: WikiStore, monkeypatch) -> None:
    from kloop.wiki.search import CANDIDATES, FtsSearch

    fix = _crowded_history(repo, CANDIDATES + 10)
    GitIngester(store).ingest(repo.path, repo="kernels")
    question = "the block scatter kernel gives wrong numbers for long prompts"

    def weighed() -> bool:
        return any(sha and fix.startswith(sha) for sha, _ in store.candidates(question)[2])

    assert weighed()
    monkeypatch.setattr(FtsSearch, "_fixes", lambda self, *args: [])  # the same search without its pass over fixes
    assert not weighed()


@pytest.mark.parametrize(("question", "title", "shares"), [
    # the fix's title names both symptoms in the user's terms (hangs, inf), and so their mechanisms
    ("top-k spins forever when a row holds negative-infinity entries", "fix: top_k_mask_logits hangs on -inf inputs",
     (1.0, 1.0)),
    # one symptom in the user's terms (large tensors); int64 is the mechanism of both the fault and the size
    ("the RMS kernel corrupts memory once the tensor holds more than two billion values",
     "fix(norm): widen address arithmetic to int64 for large tensors", (0.5, 1.0)),
    # one of the two symptoms named, by its mechanism only (the hang's semaphore)
    ("the GEMM freezes and then returns NaN", "per-stream semaphore workspace for the GEMM", (0.0, 0.5)),
    ("the GEMM freezes", "speed up the GEMM epilogue", (0.0, 0.0)),
])
def test_a_fix_title_names_the_questions_symptoms(question: str, title: str, shares: tuple[float, float]) -> None:
    table = default_symptom_table()
    assert table.named_by(tokens_of(title), table.fired(question)) == shares


def test_a_question_without_a_symptom_names_none() -> None:
    table = default_symptom_table()
    assert table.fired("how do I call the grouped GEMM") == []
    assert table.named_by(tokens_of("fix: GEMM hangs with NaN"), []) == (0.0, 0.0)
