"""The alias table: token-boundary classification, its measured precision/recall, query expansion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.wiki.aliases import default_alias_table, load_alias_table, tokens_of
from kloop.wiki.schema import finding_ids

LABELS = Path(__file__).resolve().parents[2] / "bench" / "wiki_corpus" / "classifier_labels.jsonl"


@pytest.mark.parametrize(
    "text",
    [
        "Remove builds on legacy OSs from CI",  # lds inside builds
        "Fix holds on the mutex", "Add new fields", "worlds and welds",  # ...lds
        "Update emfma test vectors",  # mfma inside emfma
        "Use a bitmap for pages",  # tma inside bitmap
        "Rename upstream kernels",  # stream k across a word boundary
        "Splitting kernels into files",  # split k
        "items stems systems",  # tmem-ish, sm
    ],
)
def test_known_traps_classify_as_nothing_technical(text: str) -> None:
    found = default_alias_table().classify(text)
    assert found.techniques == [] and found.arch == []
    assert found.vendor() == "any"


def test_inflections_and_separators() -> None:
    table = default_alias_table()
    assert table.classify("swizzled tiles").techniques == ["swizzle"]
    assert table.classify("splitK and split_k and Split-K").techniques == ["split-k"]
    assert table.classify("__builtin_amdgcn_mfma_f32_32x32x8f16").techniques == ["mfma"]
    longest = table.classify("the Tensor Memory Accelerator")
    assert longest.techniques == ["tma"]  # not tcgen05's "tensor memory"


def test_labelled_commits_precision_recall_and_vendor() -> None:
    """Measured on bench/wiki_corpus/classifier_labels.jsonl (numbers reported in docs/wiki.md)."""
    table = default_alias_table()
    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    assert len(rows) >= 60
    tp = fp = fn = vendor_ok = 0
    for row in rows:
        found = table.classify(row["message"])
        got, want = set(found.techniques), set(row["techniques"])
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
        vendor_ok += found.vendor() == row["vendor"]
        if not want:  # every trap / non-kernel message: no technique may fire
            assert not got, row["message"]
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert precision >= 0.95 and recall >= 0.9, (precision, recall)
    assert vendor_ok / len(rows) >= 0.95


def test_findings_in_the_table_are_the_design_vocabulary() -> None:
    table = default_alias_table()
    used = {f for row in table.rows for f in row.findings}
    assert used <= finding_ids()


def test_expansion_is_bidirectional() -> None:
    table = default_alias_table()
    [(_, _, lds_terms)] = table.expansions(tokens_of("lds"))
    [(_, _, smem_terms)] = table.expansions(tokens_of("shared memory"))
    assert "shared memory" in lds_terms and "lds" in smem_terms
    [(_, _, wgmma_terms)] = table.expansions(tokens_of("warpgroup mma"))
    assert "wgmma" in wgmma_terms


def test_bad_alias_file_names_the_problem() -> None:
    with pytest.raises(BadInput, match="aliases.yaml"):
        load_alias_table("aliases: [{canonical: x, field: weird, synonyms: [x]}]", "aliases.yaml")
    with pytest.raises(BadInput, match="unknown finding id"):
        load_alias_table("aliases: [{canonical: x, field: tag, findings: [slow], synonyms: [x]}]", "aliases.yaml")
    with pytest.raises(BadInput, match="not valid YAML"):
        load_alias_table("aliases: [", "aliases.yaml")


def test_rows_that_cost_real_history_recall_classify_but_do_not_expand() -> None:
    """xdl -> mfma / matrix core and mqa -> attention / mla each cost a tune question (bench/wiki_real.py --ablate)."""
    from kloop.wiki.query import parse_query

    table = default_alias_table()
    assert not parse_query("When were XDL kernels disabled?", table).synonyms
    assert '"attention"' not in parse_query("When were the FP8 MQA logits kernels added?", table).synonyms
    assert "mfma" in table.classify("Disable XDL kernels on unsupported HW").techniques
