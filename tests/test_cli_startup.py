"""The commands that verify nothing start fast: none of them imports torch, numpy or an agent SDK.

Wall time is measured by bench/startup.py (p50 under 0.3 s, docs/benchmarks.md); a wall-time
assert would flake on a shared machine, so this guard checks what the time is made of: the heavy
imports (torch alone is ~1.5 s here) stay out of `--help`, `status`, `wiki search` and `task show`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "numpy", "triton", "scipy", "openai", "mcp", "safetensors"}
PROBE = """
import contextlib, io, json, sys
{prelude}
from kloop.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue()[-400:], "err": err.getvalue()[-400:],
                  "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _run(args: list[str], home: Path, prelude: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE.replace("{prelude}", prelude), *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KLOOP_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def wiki_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    db = home / "wiki.sqlite"
    subprocess.run([sys.executable, "-m", "kloop.cli", "wiki", "ingest", "cards", "--db", str(db)], cwd=ROOT,
                   check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KLOOP_HOME": str(home)})
    return db


def test_commands_that_verify_nothing_import_nothing_heavy(wiki_db: Path) -> None:
    home = wiki_db.parent
    cases = {
        "--help": (["--help"], 0, "KernelWiki"),
        "status": (["status", str(home / "no-such-run")], 2, "no-such-run"),
        "wiki search": (["wiki", "search", "tensor core gemm", "--db", str(wiki_db)], 0, "card/"),
        "task show": (["task", "show", "examples/rmsnorm"], 0, "rmsnorm"),
    }
    for name, (args, code, seen) in cases.items():
        got = _run(args, home)
        assert got["code"] == code and seen in got["out"] + got["err"], (name, got["code"], got["out"], got["err"])
        assert not HEAVY & set(got["modules"]), f"kloop {name} imports {sorted(HEAVY & set(got['modules']))}"


def test_the_guard_sees_a_heavy_import(wiki_db: Path) -> None:
    """The probe's module list is the process's own: numpy imported before the command shows up."""
    got = _run(["--help"], wiki_db.parent, prelude="import numpy")
    assert got["code"] == 0 and "numpy" in HEAVY & set(got["modules"])
