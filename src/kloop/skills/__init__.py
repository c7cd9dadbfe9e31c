"""kloop's Agent Skills (SKILL.md folders) and where each coding agent looks for them.

`install(target, directory)` copies every shipped skill into the folder the target agent scans
for project skills, so an agent started in `directory` finds verify, profile, wiki and the loop.
The locations are data (`TARGETS`), taken from each tool's own documentation:
Claude Code `.claude/skills/`, Codex `.agents/skills/` (its repository-level folder; the older
`~/.codex/skills` is per user), Kimi Code `.kimi/skills/` (it also reads `.agents/skills/`), and
the open Agent Skills location `.agents/skills/` for any other agent.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from kloop.errors import BadInput

__all__ = ["TARGETS", "install", "shipped_skills", "target_for_agent"]

TARGETS: dict[str, Path] = {
    "claude": Path(".claude/skills"),
    "codex": Path(".agents/skills"),
    "kimi": Path(".kimi/skills"),
    "agents": Path(".agents/skills"),
}
"""Project-level skill folder of each target agent, relative to the project (workspace) root."""

AGENT_TARGETS = {"claude": "claude", "codex": "codex", "kimi": "kimi"}
"""Writer kind -> skills target the loop installs into the workspace (`openai:` has its tools built in)."""

_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def shipped_skills() -> list[Path]:
    """The skill folders shipped in this package, each checked: front matter name = folder name."""
    import yaml

    found = []
    for folder in sorted(p for p in Path(__file__).parent.iterdir() if (p / "SKILL.md").is_file()):
        match = _FRONT.match((folder / "SKILL.md").read_text())
        meta = yaml.safe_load(match.group(1)) if match else None
        if not isinstance(meta, dict) or meta.get("name") != folder.name or not meta.get("description"):
            raise BadInput(folder / "SKILL.md", "front matter needs `name` (= the folder name) and `description`")
        found.append(folder)
    return found


def install(target: str, directory: Path) -> list[Path]:
    """Write every shipped skill under `directory/<target's folder>/`; returns the SKILL.md paths.

    Re-installing replaces kloop's own skill folders and leaves any other skill there alone.
    """
    if target not in TARGETS:
        raise BadInput("--target", f"expected one of {', '.join(TARGETS)}, got {target!r}")
    if directory.exists() and not directory.is_dir():
        raise BadInput(directory, "is not a directory")
    root = directory / TARGETS[target]
    written = []
    for skill in shipped_skills():
        dest = root / skill.name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(skill, dest, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
        written.append(dest / "SKILL.md")
    return written


def target_for_agent(spec: str) -> str | None:
    """The skills target for an agent spec (`claude`, `codex:...`), None for kinds without a skill loader."""
    return AGENT_TARGETS.get(spec.partition(":")[0].strip())
