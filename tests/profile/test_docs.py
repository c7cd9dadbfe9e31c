"""docs/profiler.md is generated from rules.yaml; the skill text is a valid Agent Skill."""

from __future__ import annotations

from pathlib import Path

import yaml

from kloop.profile.docgen import render_block
from kloop.profile.schema import FindingId

REPO = Path(__file__).resolve().parents[2]


def test_profiler_doc_table_is_in_sync_with_rules() -> None:
    text = (REPO / "docs" / "profiler.md").read_text()
    assert render_block() in text, "run: python -m kloop.profile.docgen docs/profiler.md"
    for finding in FindingId:
        assert f"`{finding.value}`" in text


def test_doc_table_names_sources_for_both_vendors() -> None:
    block = render_block()
    assert "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld" in block  # NVIDIA coalescing
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared" in block  # NVIDIA bank conflicts
    assert "SQ_LDS_BANK_CONFLICT" in block  # AMD side of the same rule


def test_skill_has_agent_skill_front_matter_and_teaches_the_loop() -> None:
    text = (REPO / "src" / "kloop" / "skills" / "kloop-profile" / "SKILL.md").read_text()
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["name"] == "kloop-profile" and len(front["description"]) > 50
    for command in ("kloop profile collect", "kloop profile analyze", "--against", "kloop verify"):
        assert command in text
