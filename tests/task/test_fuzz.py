"""Fuzzing: random mutations of valid definitions, workloads and solutions give BadInput or success."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kloop.errors import BadInput
from kloop.task.load import load_solution, load_task
from kloop.task.parsing import parse_json, validate
from kloop.task.schema import Definition
from kloop.task.shapes import check_workload, flops_for, min_bytes_for, resolve_axes, tolerance_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VALID = json.loads((EXAMPLES / "rmsnorm" / "definition.json").read_text())
GDN = json.loads(
    (Path(__file__).resolve().parents[3] / "shared/fixtures/flashinfer-trace/definitions/gdn_decode_qk4_v8_d128_k_last.json").read_text()
) if (Path(__file__).resolve().parents[3] / "shared/fixtures").is_dir() else VALID

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["tokens", "hidden", "var", "const", "float32", "int8", "x", "y", "run", "a::b", "..", "tokens * 2",
                     "tokens ** 99", "def run(x, weight):\n    return x\n", "__import__('os')"]),
)  # fmt: skip
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a node of a JSON document."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(doc: Any, data: st.DataObject) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["replace", "delete", "rename", "insert"]))
        if not path:
            doc = data.draw(json_value) if op == "replace" else doc
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if op == "replace":
            parent[last] = data.draw(json_value)
        elif op == "delete":
            del parent[last]
        elif op == "rename" and isinstance(parent, dict):
            parent[data.draw(st.text(max_size=8))] = parent.pop(last)
        elif op == "insert" and isinstance(parent[last], dict):
            parent[last][data.draw(st.sampled_from(["tokens", "hidden", "y", "extra", "optional"]))] = data.draw(json_value)
    return doc


def _exercise(definition: Definition) -> None:
    """Use a definition the way the verifier does; only BadInput may come out."""
    axes = {name: 3 for name in definition.axes}
    axes.update(definition.const_axes)
    for output in definition.outputs:
        tolerance_for(definition, output)
    flops_for(definition, axes)
    min_bytes_for(definition, axes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), base=st.sampled_from([VALID, GDN]))
def test_mutated_definitions_are_bad_input_or_valid(data: st.DataObject, base: dict) -> None:
    doc = _mutate(base, data)
    try:
        definition = validate(Definition, doc, "definition.json")
    except BadInput as exc:
        assert "\n" not in str(exc) and str(exc).startswith("definition.json: ")
        return
    with contextlib.suppress(BadInput):
        _exercise(definition)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=60), st.sampled_from([json.dumps(VALID)[:n] for n in (1, 10, 100, 500)])))
def test_arbitrary_text_is_bad_input_or_valid(text: str) -> None:
    try:
        validate(Definition, parse_json(text, "definition.json"), "definition.json")
    except BadInput as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_workloads_are_bad_input_or_valid(data: st.DataObject) -> None:
    task = load_task(EXAMPLES / "rmsnorm")
    line = json.loads((EXAMPLES / "rmsnorm" / "workloads.jsonl").read_text().splitlines()[2])
    doc = _mutate(line["workload"], data)
    from kloop.task.schema import Workload

    try:
        workload = validate(Workload, doc, "workloads.jsonl:3")
        check_workload(task.definition, workload, "workloads.jsonl:3")
        resolve_axes(task.definition, workload)
    except BadInput as exc:
        assert "\n" not in str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_solution_manifests_are_bad_input_or_valid(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    folder = tmp_path_factory.mktemp("solution")
    manifest = json.loads((EXAMPLES / "rmsnorm" / "solutions" / "cpp_fused" / "solution.json").read_text())
    (folder / "kernel.cpp").write_text((EXAMPLES / "rmsnorm" / "solutions" / "cpp_fused" / "kernel.cpp").read_text())
    (folder / "solution.json").write_text(json.dumps(_mutate(manifest, data)))
    try:
        load_solution(folder)
    except BadInput as exc:
        assert "\n" not in str(exc)
