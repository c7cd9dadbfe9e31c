"""Which of a writer's refused actions reject its round: aims at the reward, not every denial."""

from __future__ import annotations

from pathlib import Path

import kloop
from kloop.loop.rounds import _split_refusals


def test_attempts_on_what_decides_the_reward_reject_the_round(tmp_path: Path) -> None:
    run = tmp_path / "run"
    package = Path(kloop.__file__).resolve().parent
    denials = [
        f"Write {run}/sealed/definition.json: Permission denied",
        "Edit ../sealed/baseline/main.py: outside the working directory",
        f"Bash: echo x >> {package}/verify/compare.py: Read-only file system",
        f"Write {run}/workspace/.git/hooks/pre-commit: denied",
        "Bash: pip install numba: not allowed",
        "Read /root/.ssh/id_rsa: outside the working directory",
    ]
    tampering, evidence = _split_refusals(denials, run)
    assert tampering == denials[:4]
    assert evidence == denials[4:]
