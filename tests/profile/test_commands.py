"""`kloop profile analyze` through the real CLI entry point (exit codes, one-line errors, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["profile", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_json_contract(capsys, h200: Path) -> None:
    code, out, err = _run(capsys, "analyze", str(h200 / "tiny_grid_sum" / "raw.csv"), "--json", "--min-bytes", "67108864")
    assert code == 0, err
    document = json.loads(out)
    (kernel,) = document["kernels"]
    assert kernel["findings"][0]["id"] == "grid_too_small"
    assert kernel["next_edit"].startswith("[grid_too_small]")


def test_analyze_against_adds_a_diff(capsys, h200: Path, derived: Path) -> None:
    code, out, _ = _run(capsys, "analyze", str(derived / "copy_strided_fixed.details.csv"), "--json",
                        "--against", str(h200 / "copy_strided" / "details.csv"))  # fmt: skip
    assert code == 0
    diff = json.loads(out)["diff"]
    assert diff["kernels"][0]["resolved"] == ["uncoalesced_global_access"]


def test_analyze_markdown(capsys, h200: Path) -> None:
    code, out, _ = _run(capsys, "analyze", str(h200 / "heavy_regs" / "report.ncu-rep"))
    assert code == 0 and out.startswith("## heavy_regs") and "occupancy_limited_registers" in out


@pytest.mark.parametrize("content", [b"", b"hello\n", b"SQLite format 3\x00garbage"])
def test_bad_reports_exit_2_with_one_line(capsys, tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "report.bin"
    path.write_bytes(content)
    code, out, err = _run(capsys, "analyze", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"kloop: error: {path}")


def test_missing_report_exit_2(capsys, tmp_path: Path) -> None:
    code, _, err = _run(capsys, "analyze", str(tmp_path / "nope.ncu-rep"))
    assert code == 2 and "no such file" in err


def test_wiki_without_database_says_so_in_one_line(capsys, monkeypatch, tmp_path: Path, h200: Path) -> None:
    pytest.importorskip("kloop.wiki")
    monkeypatch.setenv("KLOOP_HOME", str(tmp_path / "home"))
    code, out, err = _run(capsys, "analyze", str(h200 / "copy_vec4" / "details.csv"), "--wiki")
    assert code == 0 and "## copy_vec4" in out
    assert err.count("\n") == 1 and "no KernelWiki database" in err
    assert not (tmp_path / "home" / "wiki.sqlite").exists()


def test_wiki_lookup_returns_cards_for_findings(capsys, monkeypatch, tmp_path: Path, h200: Path) -> None:
    wiki = pytest.importorskip("kloop.wiki")
    monkeypatch.setenv("KLOOP_HOME", str(tmp_path))
    wiki.WikiStore(tmp_path / "wiki.sqlite")  # a new store is seeded with kloop's shipped cards
    code, out, err = _run(capsys, "analyze", str(h200 / "transpose_conflict" / "details.csv"), "--json", "--wiki")
    assert code == 0, err
    finding = json.loads(out)["kernels"][0]["findings"][0]
    assert finding["id"] == "shared_memory_bank_conflict"
    assert finding["wiki_hits"], "the bank-conflict query should find a shipped card"
