"""`kloop doctor --agents` as a user runs it: a real subprocess, the real CLIs, the scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.cli_cases import CLIS

pytestmark = pytest.mark.timeout(600)


def _doctor(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("kloop")), "doctor", "--agents", "--json"], capture_output=True,
                          text=True, env=env, timeout=560)


NPM_CLIS = [c for c in CLIS if c.name != "kimi-legacy"]  # setup always installs these three


@pytest.mark.skipif(not all(c.installed() for c in NPM_CLIS), reason="agent CLIs missing: run scripts/agent-clis.sh")
def test_every_installed_cli_answers_a_scripted_call_through_its_adapter() -> None:
    proc = _doctor(dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["agents"]}
    assert set(rows) == {c.name for c in CLIS}
    for name, row in rows.items():
        if name == "kimi-legacy" and not row["found"]:  # only where a Python >= 3.13 let setup install it
            continue
        assert row["found"] and row["version"], row
        assert row["writer"] is None and row["reviewer"] is None, row


def test_missing_clis_are_reported_not_crashed(tmp_path) -> None:
    names = [c.name.upper().replace("-", "_") for c in CLIS]
    env = dict(os.environ, **{f"KLOOP_{n}_BIN": str(tmp_path / "absent") for n in names})
    proc = _doctor(env)
    assert proc.returncode == 0, proc.stderr
    assert [r["found"] for r in json.loads(proc.stdout)["agents"]] == [False] * len(names)
