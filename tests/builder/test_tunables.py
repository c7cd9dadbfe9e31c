"""Tunables (kloop.task.tunables): strict instantiation, defaults when building a solution with placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kloop.builder import build_solution
from kloop.errors import BadInput
from kloop.task.tunables import default_config, instantiate, placeholders
from tests.builder.conftest import make_solution

TUNED = {"main.py": "SCALE = ${SCALE}\nOFFSET = ${OFFSET}\nSHELL = '${HOME}'\n\n"
                    "def run(x):\n    return x * SCALE + OFFSET\n"}
TUNABLES = {"SCALE": [2, 3, 4], "OFFSET": [0, 10]}


def _tuned():  # noqa: ANN202
    return make_solution("python", TUNED, "main.py::run", tunables=TUNABLES)


def test_instantiate_substitutes_declared_names_only() -> None:
    solution = _tuned()
    assert placeholders(solution) == {"SCALE", "OFFSET"}
    assert default_config(solution) == {"SCALE": 2, "OFFSET": 0}
    concrete = instantiate(solution, {"SCALE": 4, "OFFSET": 10})
    text = concrete.sources[0].content
    assert "SCALE = 4\nOFFSET = 10" in text and "'${HOME}'" in text
    assert placeholders(concrete) == set()


@pytest.mark.parametrize(("config", "expected"), [
    ({"SCALE": 2, "OFFSET": 0, "WARPS": 4}, "unknown tunable.*WARPS"),
    ({"SCALE": 5, "OFFSET": 0}, r"SCALE=5 not among the declared values"),
    ({"SCALE": 3}, "no value for tunable.*OFFSET"),
])
def test_instantiate_refuses_bad_configs(config: dict, expected: str) -> None:
    with pytest.raises(BadInput, match=expected):
        instantiate(_tuned(), config)


def test_each_configuration_builds_separately(build_cache: Path) -> None:
    x = torch.ones(2)
    default = build_solution(_tuned(), device="cpu", cache_dir=build_cache)
    other = build_solution(instantiate(_tuned(), {"SCALE": 3, "OFFSET": 10}), device="cpu", cache_dir=build_cache)
    assert torch.equal(default.fn(x), x * 2) and torch.equal(other.fn(x), x * 3 + 10)
    assert default.cache_key != other.cache_key
