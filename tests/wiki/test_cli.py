"""`kloop wiki` as a real subprocess: exit codes, one-line errors, the JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

KLOOP = [sys.executable, "-m", "kloop.cli"]


def kloop(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KLOOP_HOME": str(home)}
    return subprocess.run([*KLOOP, *args], capture_output=True, text=True, env=env, timeout=120)


def test_ingest_search_show_round_trip(repo, tmp_path: Path) -> None:
    repo.git("remote", "add", "origin", "https://github.com/ROCm/aiter.git")
    sha = repo.commit("[ROCm] Tune waves_per_eu for fp8 MoE on MI300X (#567)", {"aiter/ops/moe.py": "x = 1\n"})
    db = str(tmp_path / "w.sqlite")
    ingest = kloop("wiki", "ingest", "git", str(repo.path), "--repo", "aiter", "--db", db, "--json", home=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    assert json.loads(ingest.stdout)["entries_added"] == 1

    found = kloop("wiki", "search", "occupancy waves per eu", "--vendor", "amd", "--kind", "pr", "--json", "--db", db,
                  home=tmp_path)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["id"] == f"aiter@{sha[:12]}"
    assert set(hits[0]) == {"id", "title", "kind", "score", "snippet", "source"}
    assert hits[0]["source"]["url"] == "https://github.com/ROCm/aiter/pull/567"

    shown = kloop("wiki", "show", hits[0]["id"], "--follow-sources", "--db", db, home=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "UNTRUSTED" in shown.stdout and "```untrusted-upstream-text" in shown.stdout
    assert f"commit {sha}" in shown.stdout  # read back from the local clone


def test_default_db_lives_in_kloop_home_and_has_cards(tmp_path: Path) -> None:
    out = kloop("wiki", "search", "bank conflicts", "--json", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "wiki.sqlite").exists()
    json.loads(out.stdout)  # valid JSON even when there are no cards yet


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "w.sqlite")
    cases = [
        ("wiki", "ingest", "git", str(tmp_path / "nope"), "--db", db),
        ("wiki", "search", "gemm", "--vendor", "intel", "--db", db),
        ("wiki", "show", "no/such-entry", "--db", db),
        ("wiki", "ingest", "cards", str(tmp_path / "missing-cards"), "--db", db),
    ]
    for args in cases:
        out = kloop(*args, home=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kloop: error: "), out.stderr
        assert "Traceback" not in out.stderr


def test_ingest_cards_from_a_directory(tmp_path: Path) -> None:
    cards = tmp_path / "team-cards" / "amd"
    cards.mkdir(parents=True)
    (cards / "lds-swizzle.md").write_text(
        "---\nid: team-lds-swizzle\ntitle: XOR swizzle for LDS tiles on MI300X\nvendor: amd\narch: [gfx942]\n"
        "findings: [shared_memory_bank_conflict]\nconfidence: inferred\n"
        "sources:\n  - url: https://example.com/notes\n---\n## What it is\nA team note.\n"
    )
    db = str(tmp_path / "w.sqlite")
    out = kloop("wiki", "ingest", "cards", str(tmp_path / "team-cards"), "--db", db, home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1 cards read")
    found = kloop("wiki", "search", "finding:shared_memory_bank_conflict swizzle", "--arch", "gfx942",
                  "--kind", "card", "--json", "--db", db, home=tmp_path)
    ids = [h["id"] for h in json.loads(found.stdout)["hits"]]
    assert "card/team-lds-swizzle" in ids[:3]
