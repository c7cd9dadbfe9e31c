"""Every profiler playbook rule's wiki_query leads to a card that answers its finding.

`kloop profile analyze --wiki` looks each finding's `wiki_query` up with `k=3` and the kernel's
vendor filter. This test ingests the shipped cards into a real temporary SQLite store and runs
exactly those searches: unfiltered, and filtered to each vendor. A query that does not surface a
card whose front matter lists the rule's finding id fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kloop

PACKAGE = Path(kloop.__file__).resolve().parent
RULES = PACKAGE / "profile" / "rules.yaml"
CARDS_DIR = PACKAGE / "wiki" / "cards"
TOP_K = 3
VENDOR_FILTERS = (None, "nvidia", "amd")


def playbook_rules() -> list[dict[str, Any]]:
    if not RULES.is_file():
        return []
    data = yaml.safe_load(RULES.read_text(encoding="utf-8")) or {}
    return [r for r in data.get("rules", []) if isinstance(r, dict)]


def _rule_cases() -> list[Any]:
    rules = playbook_rules()
    if not rules:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no playbook rules at {RULES} yet"))]
    return [
        pytest.param(rule, vendor, id=f"{i:02d}-{rule.get('id')}-{vendor or 'any'}")
        for i, rule in enumerate(rules)
        for vendor in VENDOR_FILTERS
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from kloop.wiki import WikiStore, load_cards

    opened = WikiStore(tmp_path_factory.mktemp("wiki") / "cards.sqlite", seed_cards=False)
    opened.add(load_cards(CARDS_DIR, "kloop/wiki/cards"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def card_findings() -> dict[str, set[str]]:
    from kloop.wiki import load_cards

    return {e.id: set(e.findings) for e in load_cards(CARDS_DIR, "kloop/wiki/cards")}


def test_every_rule_has_an_id_and_a_query() -> None:
    rules = playbook_rules()
    if not rules:
        pytest.skip(f"no playbook rules at {RULES} yet")
    from kloop.findings import FindingId

    known = {f.value for f in FindingId}
    for rule in rules:
        assert rule.get("id") in known, rule
        assert isinstance(rule.get("wiki_query"), str) and rule["wiki_query"].strip(), rule


@pytest.mark.parametrize(("rule", "vendor"), _rule_cases())
def test_rule_query_finds_a_card_for_its_finding(
    rule: dict[str, Any], vendor: str | None, store: Any, card_findings: dict[str, set[str]]
) -> None:
    hits = store.search(rule["wiki_query"], k=TOP_K, vendor=vendor)
    answering = [h.id for h in hits if rule["id"] in card_findings.get(h.id, set())]
    assert answering, (
        f"rule {rule['id']!r}: query {rule['wiki_query']!r} (vendor={vendor}) returned "
        f"{[h.id for h in hits]}, none of which lists {rule['id']!r} in its findings"
    )


def test_every_finding_the_playbook_emits_has_a_card(card_findings: dict[str, set[str]]) -> None:
    emitted = {r["id"] for r in playbook_rules()}
    if not emitted:
        pytest.skip(f"no playbook rules at {RULES} yet")
    covered = set().union(*card_findings.values())
    assert emitted <= covered, sorted(emitted - covered)
