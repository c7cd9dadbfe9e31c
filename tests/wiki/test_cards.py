"""The shipped KernelWiki cards: format, coverage of the finding vocabulary, and findability.

Every card under ``src/kloop/wiki/cards/{nvidia,amd,universal}/`` is a markdown file with YAML
front matter (the format agreed with the wiki store's card ingester). These tests read the real
files; the search tests ingest them into a real temporary SQLite database through
``kloop.wiki`` and query it the way an agent would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import kloop

CARDS_DIR = Path(kloop.__file__).resolve().parent / "wiki" / "cards"
REPO = Path(__file__).resolve().parents[2]
QUESTIONS = REPO / "bench" / "wiki_corpus" / "questions_cards.jsonl"

# The finding vocabulary of DESIGN.md ("ids are fixed; add new ones, never rename").
DESIGN_FINDINGS: frozenset[str] = frozenset(
    {
        "memory_bound", "compute_bound", "latency_bound", "near_speed_of_light", "tensor_core_bound",
        "grid_too_small", "tail_effect", "occupancy_limited_registers", "occupancy_limited_shared_memory",
        "occupancy_limited_block_size", "register_spill", "uncoalesced_global_access",
        "shared_memory_bank_conflict", "warp_divergence", "atomic_contention", "tensor_cores_unused",
        "poor_data_reuse", "redundant_dram_traffic", "long_scoreboard_stall", "barrier_stall",
        "pipe_throttle", "instruction_cache_miss", "low_issue_efficiency", "launch_overhead",
        "workload_imbalance",
    }
)
VENDORS = {"nvidia", "amd", "any"}
FOLDER_VENDOR = {"nvidia": "nvidia", "amd": "amd", "universal": "any"}
CONFIDENCE = {"verified", "source-reported", "inferred"}
SECTIONS = ("## What it is", "## When it helps", "## How to apply", "## Pitfalls", "## Sources")
REQUIRED_KEYS = {"id", "title", "vendor", "arch", "tags", "techniques", "findings", "confidence", "sources", "license"}
ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ARCH_RE = re.compile(r"^(?:sm_\d{2,3}|gfx[0-9a-f]{3,4})$")
MIN_CARDS = 40
MIN_PER_VENDOR = 12


@dataclass(frozen=True)
class Card:
    path: Path
    meta: dict[str, Any]
    body: str

    @property
    def id(self) -> str:
        return str(self.meta["id"])


def parse_card(path: Path) -> Card:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.DOTALL)
    assert match, f"{path}: no YAML front matter between '---' lines"
    meta = yaml.safe_load(match.group(1))
    assert isinstance(meta, dict), f"{path}: front matter is not a mapping"
    return Card(path=path, meta=meta, body=match.group(2))


def card_paths() -> list[Path]:
    return sorted(CARDS_DIR.glob("*/*.md"))


def load_cards() -> list[Card]:
    return [parse_card(p) for p in card_paths()]


def finding_vocabulary() -> set[str]:
    """The profiler's FindingId enum, which cards are validated against."""
    from kloop.findings import FindingId

    return {str(f.value) for f in FindingId}


def word_count(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9_.:/+-]+", text))


# ---------------------------------------------------------------- format, one test per card


@pytest.mark.parametrize("path", card_paths(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_card_is_well_formed(path: Path) -> None:
    card = parse_card(path)
    meta = card.meta
    missing = REQUIRED_KEYS - meta.keys()
    assert not missing, f"{path.name}: front matter lacks {sorted(missing)}"
    assert card.id == path.stem, f"{path.name}: id {card.id!r} differs from the file name"
    assert ID_RE.match(card.id), f"{path.name}: id must be lower-case words joined by '-'"
    assert isinstance(meta["title"], str) and len(meta["title"]) >= 10
    assert meta["vendor"] in VENDORS
    assert meta["vendor"] == FOLDER_VENDOR[path.parent.name], f"{path.name}: vendor does not match its folder"
    assert meta["confidence"] in CONFIDENCE
    assert meta["license"] == "Apache-2.0"
    for key in ("arch", "tags", "techniques", "findings"):
        assert isinstance(meta[key], list), f"{path.name}: {key} must be a list"
        assert all(isinstance(v, str) and v for v in meta[key]), f"{path.name}: {key} holds non-strings"
    assert meta["tags"] and meta["techniques"], f"{path.name}: needs tags and techniques"
    if meta["vendor"] != "any":
        assert meta["arch"], f"{path.name}: a vendor card names its architectures"
    for arch in meta["arch"]:
        # Canonical ids as kloop.device reports them (sm_90, not sm_90a), so `--arch` filters match.
        assert ARCH_RE.match(arch), f"{path.name}: arch {arch!r} is not a canonical sm_NN / gfxNNN id"
        expected_vendor = "nvidia" if arch.startswith("sm_") else "amd"
        assert meta["vendor"] in (expected_vendor, "any"), f"{path.name}: {arch} on a {meta['vendor']} card"
    unknown = set(meta["findings"]) - finding_vocabulary()
    assert not unknown, f"{path.name}: finding ids outside the vocabulary: {sorted(unknown)}"


@pytest.mark.parametrize("path", card_paths(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_card_body_has_sections_and_sources(path: Path) -> None:
    card = parse_card(path)
    positions = [card.body.find(s + "\n") for s in SECTIONS]
    assert all(p >= 0 for p in positions), f"{path.name}: missing one of {SECTIONS}"
    assert positions == sorted(positions), f"{path.name}: sections out of order"
    sources = card.meta["sources"]
    assert isinstance(sources, list) and sources, f"{path.name}: no sources"
    for src in sources:
        assert isinstance(src, dict) and {"url", "title"} <= src.keys(), f"{path.name}: bad source {src!r}"
        assert str(src["url"]).startswith("https://"), f"{path.name}: source must be https: {src['url']}"
    sources_section = card.body[positions[-1]:]
    for src in sources:
        assert src["url"] in sources_section, f"{path.name}: {src['url']} not repeated under ## Sources"
    words = word_count(card.body[: positions[-1]])
    assert 250 <= words <= 650, f"{path.name}: {words} words of substance; want about 250-600"
    assert "TODO" not in card.body and "TBD" not in card.body


# ---------------------------------------------------------------- the set as a whole


def test_card_set_size_and_vendor_balance() -> None:
    cards = load_cards()
    assert len(cards) >= MIN_CARDS
    by_vendor = {v: sum(c.meta["vendor"] == v for c in cards) for v in VENDORS}
    assert by_vendor["nvidia"] >= MIN_PER_VENDOR, by_vendor
    assert by_vendor["amd"] >= MIN_PER_VENDOR, by_vendor
    assert by_vendor["any"] >= 1, by_vendor


def test_card_ids_are_unique() -> None:
    ids = [c.id for c in load_cards()]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates


def test_every_finding_id_points_at_a_card() -> None:
    covered = {f for c in load_cards() for f in c.meta["findings"]}
    uncovered = finding_vocabulary() - covered
    assert not uncovered, f"finding ids no card answers: {sorted(uncovered)}"


def test_findings_with_vendor_specific_remedies_have_both_vendors() -> None:
    """Where NVIDIA and AMD fix a finding differently, each vendor has its own card."""
    cards = load_cards()
    for finding in ("occupancy_limited_registers", "shared_memory_bank_conflict", "tensor_cores_unused",
                    "launch_overhead", "long_scoreboard_stall"):
        vendors = {c.meta["vendor"] for c in cards if finding in c.meta["findings"]}
        assert {"nvidia", "amd"} <= vendors, f"{finding}: cards only for {sorted(vendors)}"


def test_design_vocabulary_is_within_the_finding_enum() -> None:
    """DESIGN ids are fixed: the profiler's enum may add ids, never drop these."""
    assert finding_vocabulary() >= DESIGN_FINDINGS


def test_question_set_names_real_cards_for_both_vendors() -> None:
    ids = {c.id: c for c in load_cards()}
    lines = [ln for ln in QUESTIONS.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert len(lines) >= 30
    vendors: set[str] = set()
    questions: set[str] = set()
    for line in lines:
        row = json.loads(line)
        assert set(row) == {"question", "expected"}, row
        assert isinstance(row["question"], str) and len(row["question"]) > 15
        assert row["question"] not in questions, f"duplicate question {row['question']!r}"
        questions.add(row["question"])
        assert row["expected"] and all(e in ids for e in row["expected"]), f"unknown card in {row}"
        vendors |= {ids[e].meta["vendor"] for e in row["expected"]}
        titles = {ids[e].meta["title"].lower() for e in row["expected"]}
        assert row["question"].lower() not in titles, f"question copies a title: {row['question']!r}"
    assert {"nvidia", "amd"} <= vendors
    unasked = set(ids) - {e for ln in lines for e in json.loads(ln)["expected"]}
    assert not unasked, f"cards no question expects: {sorted(unasked)}"


# ---------------------------------------------------------------- findability in a real store


@pytest.fixture(scope="module")
def card_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shipped cards ingested into a fresh SQLite/FTS5 database through kloop.wiki."""
    from kloop.wiki import WikiStore, load_cards

    store = WikiStore(tmp_path_factory.mktemp("wiki") / "cards.sqlite", seed_cards=False)
    added = store.add(load_cards(CARDS_DIR, "kloop/wiki/cards"))
    assert added == len(card_paths())
    yield store
    store.close()


def top_ids(store: Any, query: str, k: int = 3, vendor: str | None = None) -> list[str]:
    return [h.id.removeprefix("card/") for h in store.search(query, k=k, vendor=vendor)]


def test_every_card_round_trips_through_the_store(card_store: Any) -> None:
    for card in load_cards():
        entry = card_store.get(card.id)
        assert entry is not None, card.id
        assert entry.title == card.meta["title"]
        assert set(entry.findings) == set(card.meta["findings"])
        assert entry.vendor.value == card.meta["vendor"]


@pytest.mark.parametrize(
    ("query", "expected", "k"),
    [
        ("LDS bank conflicts on MI355X", "amd-lds-gfx950", 3),
        ("warpgroup mma", "hopper-wgmma", 1),
        ("tensor memory allocation on Blackwell", "blackwell-tcgen05-tmem", 3),
        ("XCD remapping for L2 locality on MI300X", "amd-mi300x-xcd-topology", 3),
        ("online softmax running max", "online-softmax-flash-attention", 3),
        ("radix select top-k", "radix-select-topk", 3),
        ("sched_group_barrier MFMA interleaving", "amd-sched-group-barrier-setprio", 1),
        ("stream-k", "stream-k", 1),
    ],
)
def test_search_finds_the_card_an_engineer_means(card_store: Any, query: str, expected: str, k: int) -> None:
    assert expected in top_ids(card_store, query, k=k)


def test_every_card_is_found_by_its_own_title(card_store: Any) -> None:
    misses = [c.id for c in load_cards() if c.id not in top_ids(card_store, c.meta["title"])]
    assert not misses


@pytest.mark.parametrize(
    ("query", "arch", "expected", "excluded"),
    [
        ("LDS bank conflicts", "gfx950", "amd-lds-gfx950", "amd-lds-gfx942"),
        ("LDS bank conflicts", "gfx942", "amd-lds-gfx942", "amd-lds-gfx950"),
        ("warpgroup mma tensor cores", "sm_90", "hopper-wgmma", "blackwell-tcgen05-tmem"),
        ("tensor memory accumulator", "sm_100", "blackwell-tcgen05-tmem", "hopper-wgmma"),
    ],
)
def test_arch_filter_as_the_device_reports_it(
    card_store: Any, query: str, arch: str, expected: str, excluded: str
) -> None:
    ids = [h.id.removeprefix("card/") for h in card_store.search(query, k=5, arch=arch)]
    assert expected in ids[:3]
    assert excluded not in ids


def test_vendor_filter_keeps_only_that_vendor_and_universal_cards(card_store: Any) -> None:
    vendors = {c.id: c.meta["vendor"] for c in load_cards()}
    amd = top_ids(card_store, "bank conflicts tensor core occupancy", k=20, vendor="amd")
    assert amd and all(vendors[i] in {"amd", "any"} for i in amd)
    assert any(vendors[i] == "amd" for i in amd)


def test_question_set_retrieval_quality(card_store: Any) -> None:
    """The engineer-worded questions find an expected card in the top 3 for most of the set."""
    rows = [json.loads(ln) for ln in QUESTIONS.read_text(encoding="utf-8").splitlines() if ln.strip()]
    hits = sum(bool(set(row["expected"]) & set(top_ids(card_store, row["question"]))) for row in rows)
    assert hits / len(rows) >= 0.85, f"hit@3 = {hits}/{len(rows)}"
