"""Writer containment against a real shell: a scripted writer tries to edit kloop's verifier.

The kloop under attack is a temporary copy of the package on PYTHONPATH, never the real src/kloop.
Each attack is also run uncontained first, so the test proves the attack works and only the
containment stops it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kloop
from kloop.agents.containment import contain, mechanisms, package_digest, parse_report

ATTACK = r"""
set -u
echo "ok = True" > "$WS/solution/kernel.py"
echo "# pwned" >> "$PKG/verify/supervisor.py"
echo pwned > "$SEALED/manifest.json"
echo pwned > "$OUTSIDE/escape.txt"
rm -f "$PKG/verify/compare.py"
mount -o remount,rw / 2>/dev/null
echo "# pwned again" >> "$PKG/verify/supervisor.py"
echo home > "$HOME/.note"
"""


@pytest.fixture()
def kloop_copy(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(Path(kloop.__file__).parent, site / "kloop", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _layout(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "WS": tmp_path / "run" / "workspace",
        "SEALED": tmp_path / "run" / "sealed",
        "OUTSIDE": tmp_path / "outside",
        "HOME": tmp_path / "agent-home",
    }
    for path in paths.values():
        path.mkdir(parents=True)
    (paths["WS"] / "solution").mkdir()
    (paths["SEALED"] / "manifest.json").write_text("{}")
    return paths


def _run_writer(site: Path, paths: dict[str, Path], contained: bool) -> subprocess.CompletedProcess[str]:
    """Run the attack from a process whose kloop is the copy (as an installed kloop would be)."""
    driver = (
        "import subprocess, sys, pathlib\n"
        "from kloop.agents.containment import contain\n"
        "argv = ['sh', '-c', sys.argv[1]]\n"
        "if sys.argv[2] == '1':\n"
        "    P = pathlib.Path\n"
        "    argv = contain(argv, writable=[P(sys.argv[3]), P(sys.argv[4])], protect=[P(sys.argv[5])], report=True)\n"
        "sys.exit(subprocess.run(argv).returncode)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "PKG": str(site / "kloop"),
           **{k: str(v) for k, v in paths.items()}}  # fmt: skip
    args = [sys.executable, "-c", driver, ATTACK, "1" if contained else "0",
            str(paths["WS"]), str(paths["HOME"]), str(paths["SEALED"])]  # fmt: skip
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)


def test_uncontained_attack_succeeds_so_the_test_can_fail(tmp_path: Path, kloop_copy: Path) -> None:
    paths = _layout(tmp_path)
    before = package_digest(kloop_copy / "kloop")
    _run_writer(kloop_copy, paths, contained=False)
    assert "# pwned" in (kloop_copy / "kloop" / "verify" / "supervisor.py").read_text()
    assert package_digest(kloop_copy / "kloop") != before


def test_contained_writer_cannot_touch_kloop_sealed_or_outside(tmp_path: Path, kloop_copy: Path) -> None:
    if not mechanisms():
        pytest.skip("no containment layer runs here (needs util-linux unshare with privilege, or Landlock)")
    paths = _layout(tmp_path)
    supervisor = kloop_copy / "kloop" / "verify" / "supervisor.py"
    original, before = supervisor.read_text(), package_digest(kloop_copy / "kloop")
    done = _run_writer(kloop_copy, paths, contained=True)
    assert parse_report(done.stderr), done.stderr
    assert (paths["WS"] / "solution" / "kernel.py").read_text() == "ok = True\n"  # the work is allowed
    assert (paths["HOME"] / ".note").read_text() == "home\n"
    assert supervisor.read_text() == original
    assert (kloop_copy / "kloop" / "verify" / "compare.py").exists()
    assert (paths["SEALED"] / "manifest.json").read_text() == "{}"
    assert not (paths["OUTSIDE"] / "escape.txt").exists()
    assert package_digest(kloop_copy / "kloop") == before


def test_protected_path_inside_the_workspace_stays_read_only(tmp_path: Path) -> None:
    found = mechanisms()
    if "mount-namespace" not in found:
        pytest.skip(f"the mount-namespace layer does not run here (ran: {list(found) or 'none'})")
    ws = tmp_path / "ws"
    (ws / "guarded").mkdir(parents=True)
    script = "echo a > new.txt; echo b > guarded/x.txt; mkdir sub && echo c > sub/y.txt"
    argv = contain(["sh", "-c", script], writable=[ws], protect=[ws / "guarded"])
    subprocess.run(argv, cwd=ws, capture_output=True, timeout=60)  # relative paths: through the cwd
    assert (ws / "new.txt").exists() and (ws / "sub" / "y.txt").exists()
    assert not (ws / "guarded" / "x.txt").exists()


def test_contained_agent_has_no_capabilities(tmp_path: Path) -> None:
    found = mechanisms()
    if "no-capabilities" not in found:
        pytest.skip(f"capabilities could not be dropped here (ran: {list(found) or 'none'})")
    argv = contain(["sh", "-c", "grep CapEff /proc/self/status"], writable=[tmp_path])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    assert out.split()[-1] == "0000000000000000"


def test_contain_needs_a_writable_path() -> None:
    with pytest.raises(ValueError, match="writable"):
        contain(["true"], writable=[])


def test_package_digest_sees_an_edit(tmp_path: Path, kloop_copy: Path) -> None:
    pkg = kloop_copy / "kloop"
    before = package_digest(pkg)
    (pkg / "verify" / "__pycache__").mkdir(exist_ok=True)
    (pkg / "verify" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert package_digest(pkg) == before  # bytecode caches do not count
    (pkg / "verify" / "compare.py").write_text((pkg / "verify" / "compare.py").read_text() + "\n")
    assert package_digest(pkg) != before
