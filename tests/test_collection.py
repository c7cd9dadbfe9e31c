"""Every test file on disk is one that the README's test command collects.

pytest's default `norecursedirs` silently skipped `tests/build/` for a whole release: 39 tests
never ran. This guard runs pytest's own collection (its recursion rules, `testpaths`,
`norecursedirs`, `python_files`) with a tiny plugin that records each test module and drops it
before import, so it costs one pytest start-up, not an import of the suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
import pytest

SEEN = []


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    result = yield
    if result:
        SEEN.append(str(file_path))
    return []  # record, never import: this guard measures recursion, not the tests


def pytest_collection_finish(session):
    print("".join(f"\\nCOLLECTED {p}" for p in SEEN))
'''


def collected_files(root: Path, tmp: Path) -> set[Path]:
    """The test modules `python -m pytest -q` (scripts/test.sh) collects from `root`."""
    (tmp / "kloop_collect_probe.py").write_text(PLUGIN, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "kloop_collect_probe", "-p", "no:cacheprovider"],
        cwd=root, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(tmp), "PATH": "/usr/bin:/bin", "HOME": str(tmp)},
    )
    lines = [line.removeprefix("COLLECTED ") for line in proc.stdout.splitlines() if line.startswith("COLLECTED ")]
    assert lines or proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {Path(line).resolve() for line in lines}


def files_on_disk(root: Path) -> set[Path]:
    return {p.resolve() for p in (root / "tests").rglob("test_*.py") if "__pycache__" not in p.parts}


def test_every_test_file_on_disk_is_collected(tmp_path: Path) -> None:
    on_disk, collected = files_on_disk(ROOT), collected_files(ROOT, tmp_path)
    assert len(on_disk) > 50
    missing = sorted(str(p.relative_to(ROOT)) for p in on_disk - collected)
    assert not missing, f"test files pytest never collects: {missing}"


def test_the_guard_sees_a_folder_pytest_skips(tmp_path: Path) -> None:
    """A `build/` test folder (the old defect) is on disk but not collected: the guard catches it."""
    project = tmp_path / "project"
    for folder in ("tests", "tests/build", "tests/ok"):
        (project / folder).mkdir(parents=True)
        (project / folder / "__init__.py").write_text("")
        (project / folder / "test_x.py").write_text("def test_x():\n    pass\n")
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    probe = tmp_path / "probe"
    probe.mkdir()
    missing = files_on_disk(project) - collected_files(project, probe)
    assert missing == {(project / "tests" / "build" / "test_x.py").resolve()}
