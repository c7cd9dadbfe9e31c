"""Card ingest: the agreed front-matter format, validation errors that name the file, shipped cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.wiki.cards import load_cards, parse_card, shipped_cards
from kloop.wiki.store import WikiStore

CARD = """---
id: hopper-tma
title: Tensor Memory Accelerator (TMA) bulk copies on Hopper
vendor: nvidia
arch: [sm_90, sm_100]
tags: [memory, async-copy]
techniques: [tma, double-buffering]
findings: [memory_bound, long_scoreboard_stall]
confidence: verified
sources:
  - url: https://docs.nvidia.com/cuda/hopper-tuning-guide/
    title: Hopper tuning guide
license: Apache-2.0
---
## What it is
TMA copies whole tiles between global and shared memory asynchronously.
## When it helps
When loads dominate.
## How to apply
Build a descriptor.
## Pitfalls
Alignment.
## Sources
The guide.
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_card_fields_map_to_entry() -> None:
    entry = parse_card(CARD, "cards/hopper-tma.md")
    assert entry.id == "card/hopper-tma" and entry.kind.value == "card"
    assert entry.vendor.value == "nvidia" and entry.arch == ["sm_90", "sm_100"]
    assert entry.confidence.value == "verified"
    assert {"finding:memory_bound", "finding:long_scoreboard_stall"} <= set(entry.tags)
    assert entry.findings == ["memory_bound", "long_scoreboard_stall"]
    assert "tma" in entry.techniques
    assert entry.source.url == "https://docs.nvidia.com/cuda/hopper-tuning-guide/"
    assert entry.source.license == "Apache-2.0" and entry.source.paths == ["cards/hopper-tma.md"]
    assert entry.body.startswith("## What it is")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("vendor: nvidia\n", ""), "missing required field 'vendor'"),
        (("vendor: nvidia", "vendor: intel"), "unknown vendor 'intel'"),
        (("confidence: verified", "confidence: certain"), "unknown confidence 'certain'"),
        (("findings: [memory_bound, long_scoreboard_stall]", "findings: [slow_kernel]"), "unknown finding id(s) slow_kernel"),
        (("id: hopper-tma", "id: Hopper TMA"), "card id"),
        (("sources:\n  - url: https://docs.nvidia.com/cuda/hopper-tuning-guide/\n    title: Hopper tuning guide\n", "sources: []\n"), "sources"),
        (("---\nid", "id"), "no YAML front matter"),
        (("arch: [sm_90, sm_100]", "arch: [sm_90"), "not valid YAML"),
    ],
)
def test_bad_cards_name_the_file(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    path = write(tmp_path, "nvidia/bad.md", CARD.replace(*change, 1))
    with pytest.raises(BadInput) as info:
        load_cards(tmp_path, str(tmp_path))
    assert info.value.where.endswith("nvidia/bad.md")
    assert message in info.value.what
    assert path.exists()


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "a/one.md", CARD)
    write(tmp_path, "b/two.md", CARD)
    with pytest.raises(BadInput, match="already used"):
        load_cards(tmp_path, "cards")


def test_readme_is_not_a_card_and_reingest_updates(tmp_path: Path, store: WikiStore) -> None:
    write(tmp_path, "README.md", "# Cards\n")
    write(tmp_path, "nvidia/hopper-tma.md", CARD)
    store.add(load_cards(tmp_path, "cards"))
    write(tmp_path, "nvidia/hopper-tma.md", CARD.replace("When loads dominate.", "When multicast helps."))
    store.add(load_cards(tmp_path, "cards"))
    assert store.count("card") == 1
    assert [h.id for h in store.search("multicast")] == ["card/hopper-tma"]
    assert store.get("hopper-tma").id == "card/hopper-tma"  # the bare card id resolves


def test_shipped_cards_load_and_seed_a_new_store(seeded_store: WikiStore) -> None:
    cards = shipped_cards()
    if not cards:
        pytest.skip("no shipped cards yet")
    assert seeded_store.count("card") == len(cards)
    assert all(c.source.url and c.sources for c in cards)
    vendors = {c.vendor.value for c in cards}
    assert {"nvidia", "amd"} <= vendors
