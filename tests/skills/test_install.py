"""`kloop skills install`: every shipped skill lands where each agent looks, with valid front matter."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kloop.cli import main
from kloop.skills import TARGETS, install, shipped_skills


def test_shipped_skills_cover_verify_profile_wiki_and_the_loop() -> None:
    assert [p.name for p in shipped_skills()] == ["kloop-loop", "kloop-profile", "kloop-verify", "kloop-wiki"]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_install_writes_where_the_agent_looks(tmp_path: Path, target: str) -> None:
    written = install(target, tmp_path)
    folder = tmp_path / TARGETS[target]
    assert sorted(p.parent.name for p in written) == sorted(p.name for p in shipped_skills())
    for path in written:
        assert path.parent.parent == folder
        front = path.read_text().split("---\n")[1]
        meta = yaml.safe_load(front)
        assert meta["name"] == path.parent.name and 0 < len(meta["description"]) <= 1024


def test_reinstall_replaces_kloops_skills_and_keeps_others(tmp_path: Path) -> None:
    install("claude", tmp_path)
    mine = tmp_path / ".claude/skills/kloop-verify/SKILL.md"
    mine.write_text("stale")
    other = tmp_path / ".claude/skills/team-style/SKILL.md"
    other.parent.mkdir()
    other.write_text("keep")
    install("claude", tmp_path)
    assert mine.read_text().startswith("---\nname: kloop-verify") and other.read_text() == "keep"


def test_cli_install_and_bad_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skills", "install", "--target", "codex", str(tmp_path)]) == 0
    assert (tmp_path / ".agents/skills/kloop-loop/SKILL.md").is_file()
    assert main(["skills", "install", "--target", "vim", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kloop: error: --target: expected one of claude, codex, kimi, agents, got 'vim'"]
