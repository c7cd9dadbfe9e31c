"""The content-hash cache: what enters the key, atomic publication, concurrent builders."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kloop.builder import BuildCache, build_solution, cache_key
from kloop.builder.cache import default_cache_dir
from tests.builder.conftest import REPO, make_solution

TOOLS = {"gcc": "12.2.0", "flags": "-O3"}


def _key(solution, **overrides) -> str:  # noqa: ANN001
    args = {"kind": "cpu", "arch": "x86_64", "toolchain": TOOLS, **overrides}
    return cache_key(solution, **args)


def test_key_covers_sources_spec_toolchain_device_and_flags() -> None:
    base = make_solution("cpp", {"kernel.cpp": "int a;", "util.h": "int b;"}, "kernel.cpp::run")
    key = _key(base)
    assert key == _key(base.model_copy(update={"name": "renamed", "description": "same code"}))
    assert key == _key(make_solution("cpp", {"kernel.cpp": "int a;", "util.h": "int b;"}, "kernel.cpp::go", dps=True))
    changed = {
        "source": _key(make_solution("cpp", {"kernel.cpp": "int a;", "util.h": "int c;"}, "kernel.cpp::run")),
        "entry file": _key(make_solution("cpp", {"kernel.cpp": "int a;", "util.h": "int b;"}, "util.h::run")),
        "language": _key(make_solution("cuda", {"kernel.cpp": "int a;", "util.h": "int b;"}, "kernel.cpp::run")),
        "toolchain": _key(base, toolchain={**TOOLS, "gcc": "13.1.0"}),
        "flags": _key(base, toolchain={**TOOLS, "flags": "-O2"}),
        "arch": _key(base, arch="aarch64"),
        "kind": _key(base, kind="cuda"),
    }
    assert key not in changed.values() and len(set(changed.values())) == len(changed)


def test_default_cache_dir_follows_kloop_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KLOOP_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "build-cache"


def test_incomplete_entry_is_rebuilt_and_failures_leave_nothing(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path)
    key = "ab" * 32
    cache.entry_dir(key).mkdir(parents=True)
    (cache.entry_dir(key) / "half-written.o").write_text("junk")  # a crashed builder, no manifest

    def fails(staging: Path) -> dict:
        (staging / "partial").write_text("x")
        raise RuntimeError("compiler died")

    with pytest.raises(RuntimeError, match="compiler died"):
        cache.ensure(key, fails)
    assert sorted(p.name for p in cache.entry_dir(key).parent.iterdir()) == [f"{key}.lock"]

    entry, manifest, hit = cache.ensure(key, lambda staging: (staging / "out.so").write_text("ok") and {"module": "m"})
    assert not hit and manifest["module"] == "m" and (entry / "out.so").read_text() == "ok"
    assert cache.ensure(key, lambda staging: pytest.fail("must not compile again"))[2] is True


RACER = """
import json, sys, time
from pathlib import Path
from kloop.builder import BuildCache
root, marker, log = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

def compile_into(staging):
    marker.write_text("compiling")
    with log.open("a") as handle:
        handle.write("compiled\\n")
    time.sleep(2.0)
    (staging / "artifact.bin").write_bytes(b"built once")
    return {"module": "racer"}

entry, manifest, hit = BuildCache(root).ensure("cd" * 32, compile_into)
print(json.dumps({"hit": hit, "artifact": (entry / "artifact.bin").read_text(), "pid": manifest["built_by_pid"]}))
"""


def test_two_processes_building_one_key_compile_once(tmp_path: Path) -> None:
    marker, log = tmp_path / "marker", tmp_path / "compiles.log"
    argv = [sys.executable, "-c", RACER, str(tmp_path / "cache"), str(marker), str(log)]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 60
    while not marker.exists():  # start the second only once the first holds the lock and compiles
        assert time.monotonic() < deadline and first.poll() is None, "first builder never started compiling"
        time.sleep(0.05)
    second = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    results = [json.loads(proc.communicate(timeout=120)[0].strip()) for proc in (first, second)]
    assert log.read_text() == "compiled\n"
    assert [r["hit"] for r in results] == [False, True]
    assert {r["artifact"] for r in results} == {"built once"} and results[1]["pid"] == first.pid


def test_concurrent_build_solution_of_one_python_candidate(tmp_path: Path) -> None:
    solution = make_solution("python", {"main.py": "def run(x):\n    return x * 7\n"}, "main.py::run")
    code = (f"import torch\nfrom kloop.builder import build_solution\nfrom kloop.task.schema import Solution\n"
            f"b = build_solution(Solution.model_validate_json({solution.model_dump_json()!r}), device='cpu', "
            f"cache_dir={str(tmp_path)!r})\nprint(int(b.fn(torch.tensor(6)).item()), b.cache_key)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
             for _ in range(2)]
    outputs = [proc.communicate(timeout=120)[0].split() for proc in procs]
    local = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert outputs == [["42", local.cache_key]] * 2 and local.cache_hit
    assert len(list(tmp_path.glob("*/*/manifest.json"))) == 1
