"""tuner: exhaustive over small spaces, surrogate-guided under a budget for large ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

from kloop.agents import AgentRequest, AgentStatus, Role
from kloop.agents.tuner import TunerAgent, all_configs, next_config
from kloop.task.tunables import instantiate_dir as instantiate


def _tunable(root: Path, space: dict) -> Path:
    sol = root / "solution"
    sol.mkdir(parents=True)
    meta = {"name": "t", "definition": "d", "author": "a",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py"}, {"path": "inline.py", "content": "B = ${BLOCK}\n"}],
            "kloop": {"tunables": space}}
    (sol / "solution.json").write_text(json.dumps(meta))
    (sol / "main.py").write_text("BLOCK = ${BLOCK}\nMODE = '${MODE}'\nKEEP = '${OTHER}'\n")
    return sol


def test_instantiate_replaces_placeholders_and_records_the_config(tmp_path: Path) -> None:
    sol = _tunable(tmp_path, {"BLOCK": [32, 64], "MODE": ["a"]})
    instantiate(sol, {"BLOCK": 64, "MODE": "a"})
    assert (sol / "main.py").read_text() == "BLOCK = 64\nMODE = 'a'\nKEEP = '${OTHER}'\n"
    meta = json.loads((sol / "solution.json").read_text())
    assert meta["kloop"] == {"config": {"BLOCK": 64, "MODE": "a"}}
    assert meta["sources"][1]["content"] == "B = 64\n"


def test_small_space_is_searched_exhaustively_then_exhausted(tmp_path: Path) -> None:
    space = {"BLOCK": [32, 64], "MODE": ["a", "b"]}
    history: list[dict] = []
    seen = []
    while (config := next_config(space, history, budget=16)) is not None:
        seen.append(config)
        history.append({"config": config, "speedup": 1.0, "passed": True})
    assert seen == all_configs(space)


def test_large_space_follows_the_surrogate_within_budget() -> None:
    space = {"A": list(range(8)), "B": list(range(8)), "C": [0, 1]}

    def speed(c: dict) -> float:  # best at A=6, B=2
        return math.exp(-abs(c["A"] - 6) * 0.3 - abs(c["B"] - 2) * 0.3)

    history: list[dict] = []
    while (config := next_config(space, history, budget=24)) is not None:
        history.append({"config": config, "speedup": speed(config), "passed": True})
    assert len(history) == 24
    best = max(history, key=lambda h: h["speedup"])["config"]
    assert abs(best["A"] - 6) + abs(best["B"] - 2) <= 1  # found (near) the optimum in 24 of 128


def test_agent_writes_one_configuration_per_call(tmp_path: Path) -> None:
    _tunable(tmp_path, {"BLOCK": [32, 64], "MODE": ["a"]})
    request = AgentRequest(role=Role.writer, prompt="", workspace=tmp_path,
                           history=[{"config": {"BLOCK": 32, "MODE": "a"}, "speedup": 1.2, "passed": True}])
    result = TunerAgent().run(request)
    assert result.status is AgentStatus.completed and "BLOCK=64" in result.final_message
    assert "BLOCK = 64" in (tmp_path / "solution" / "main.py").read_text()


def test_nothing_to_tune(tmp_path: Path) -> None:
    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "solution.json").write_text("{}")
    result = TunerAgent().run(AgentRequest(role=Role.writer, prompt="", workspace=tmp_path))
    assert result.status is AgentStatus.exhausted


def test_boolean_tunables_are_spelled_for_the_source_language(tmp_path: Path) -> None:
    """A tune round must render exactly as kloop.task does: `true` in C++, `True` in Python."""
    sol = tmp_path / "solution"
    sol.mkdir()
    meta = {"name": "t", "definition": "d", "author": "a",
            "spec": {"language": "cpp", "target_hardware": ["cpu"], "entry_point": "kernel.cpp::run"},
            "sources": [{"path": "kernel.cpp"}, {"path": "helper.py"}],
            "kloop": {"tunables": {"FAST": [False, True]}}}  # fmt: skip
    (sol / "solution.json").write_text(json.dumps(meta))
    (sol / "kernel.cpp").write_text("constexpr bool kFast = ${FAST};\n")
    (sol / "helper.py").write_text("FAST = ${FAST}\n")
    instantiate(sol, {"FAST": True})
    assert (sol / "kernel.cpp").read_text() == "constexpr bool kFast = true;\n"
    assert (sol / "helper.py").read_text() == "FAST = True\n"
