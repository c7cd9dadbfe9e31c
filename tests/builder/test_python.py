"""python solutions: private imports, sibling modules, named failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from kloop.builder import BuildError, UnknownLanguage, build_solution, languages, register_builder
from tests.builder.conftest import make_solution

MAIN = """
from . import helpers
import scale_table

def run(x):
    return helpers.double(x) * scale_table.SCALE
"""


def _candidate(factor: int, scale: int) -> dict[str, str]:
    return {"main.py": MAIN, "helpers.py": f"def double(x):\n    return x * {factor}\n",
            "scale_table.py": f"SCALE = {scale}\n"}


def test_python_builds_and_computes(build_cache: Path) -> None:
    built = build_solution(make_solution("python", _candidate(2, 3), "main.py::run"), device="cpu", cache_dir=build_cache)
    x = torch.arange(4.0)
    assert torch.equal(built.fn(x), x * 6)
    assert built.language == "python" and built.timing_meaningful and not built.destination_passing
    assert len(built.cache_key) == 64 and (built.artifact_dir / "src" / "main.py").is_file()


def test_two_candidates_do_not_share_modules(build_cache: Path) -> None:
    """Same module names, different contents: each candidate sees its own helpers."""
    first = build_solution(make_solution("python", _candidate(2, 1), "main.py::run"), device="cpu", cache_dir=build_cache)
    second = build_solution(make_solution("python", _candidate(5, 1), "main.py::run"), device="cpu", cache_dir=build_cache)
    x = torch.ones(3)
    assert torch.equal(first.fn(x), x * 2) and torch.equal(second.fn(x), x * 5)
    assert "scale_table" not in sys.modules and "helpers" not in sys.modules


def test_rebuild_of_same_content_is_a_cache_hit(build_cache: Path) -> None:
    solution = make_solution("python", _candidate(3, 1), "main.py::run", name="first-name")
    cold = build_solution(solution, device="cpu", cache_dir=build_cache)
    renamed = solution.model_copy(update={"name": "other-name"})
    warm = build_solution(renamed, device="cpu", cache_dir=build_cache)
    assert warm.cache_hit and warm.cache_key == cold.cache_key
    other_device = build_solution(solution, device="sm_90", cache_dir=build_cache)
    assert other_device.cache_key != cold.cache_key


@pytest.mark.parametrize(("files", "entry", "expected"), [
    ({"main.py": "def run(x):\n    return x +\n"}, "main.py::run", r"main\.py:2: SyntaxError"),
    ({"main.py": "import no_such_module_here\n"}, "main.py::run", r"main\.py:1: ModuleNotFoundError"),
    ({"main.py": "def go(x):\n    return x\n"}, "main.py::run", r"defines no callable 'run'"),
    ({"main.py": "raise SystemExit(3)\n"}, "main.py::run", r"SystemExit"),
    ({"kernel.cu": "int x;\n"}, "kernel.cu::run", r"not a \.py file"),
])
def test_broken_python_is_a_build_error(build_cache: Path, files: dict[str, str], entry: str, expected: str) -> None:
    with pytest.raises(BuildError, match=expected):
        build_solution(make_solution("python", files, entry), device="cpu", cache_dir=build_cache)


def test_unknown_language_is_named(build_cache: Path) -> None:
    solution = make_solution("tilelang", {"main.py": "def run(x):\n    return x\n"}, "main.py::run")
    with pytest.raises(UnknownLanguage, match="'tilelang'.*kloop builds: cpp, cuda, hip, python, triton"):
        build_solution(solution, device="cpu", cache_dir=build_cache)


def test_registry_checks_builders_when_registered() -> None:
    class NotABuilder:
        languages = ("fortran",)

    with pytest.raises(TypeError, match="not a Builder"):
        register_builder(NotABuilder())  # type: ignore[arg-type]

    class Duplicate:
        languages = ("python",)

        def fingerprint(self, solution, kind, arch):  # noqa: ANN001, ANN201
            return {}

        def compile(self, solution, entry_dir, kind, arch, module_name):  # noqa: ANN001, ANN201
            return {}

        def load(self, solution, entry_dir, manifest, kind):  # noqa: ANN001, ANN201
            return None

        def timing_meaningful(self, kind):  # noqa: ANN001, ANN201
            return True

    with pytest.raises(ValueError, match="'python' already has builder PythonBuilder"):
        register_builder(Duplicate())
    assert "fortran" not in languages()


def test_entry_in_a_sub_folder(build_cache: Path) -> None:
    files = {"impl/kernel.py": "from .util import OFFSET\n\ndef run(x):\n    return x + OFFSET\n",
             "impl/util.py": "OFFSET = 11\n"}
    built = build_solution(make_solution("python", files, "impl/kernel.py::run"), device="cpu", cache_dir=build_cache)
    assert torch.equal(built.fn(torch.zeros(2)), torch.full((2,), 11.0))
