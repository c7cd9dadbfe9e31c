"""Every malformed task or solution is one BadInput line naming the file and the problem."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.task.load import load_fib_task, load_solution, load_task, load_task_arg
from tests.task.conftest import read_json, write_json

KLOOP = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kloop"
Mutation = Callable[[Path], None]


def _edit_definition(change: Callable[[dict], None]) -> Mutation:
    def mutate(task: Path) -> None:
        data = read_json(task / "definition.json")
        change(data)
        write_json(task / "definition.json", data)

    return mutate


def _edit_workload_line(index: int, change: Callable[[dict], None]) -> Mutation:
    def mutate(task: Path) -> None:
        path = task / "workloads.jsonl"
        lines = path.read_text().splitlines()
        import json

        data = json.loads(lines[index])
        change(data)
        lines[index] = json.dumps(data)
        path.write_text("\n".join(lines) + "\n")

    return mutate


def _edit_baseline(change: Callable[[dict], None]) -> Mutation:
    def mutate(task: Path) -> None:
        data = read_json(task / "baseline" / "solution.json")
        change(data)
        write_json(task / "baseline" / "solution.json", data)

    return mutate


def _write(relpath: str, text: str) -> Mutation:
    return lambda task: (task / relpath).write_text(text)


def _remove(relpath: str) -> Mutation:
    return lambda task: (task / relpath).unlink()


def _symlink_source_outside(task: Path) -> None:
    outside = task.parent / "secret.py"
    outside.write_text("def run(x, weight):\n    return x\n")
    (task / "baseline" / "main.py").unlink()
    os.symlink(outside, task / "baseline" / "main.py")


# (id, mutation, file the message names, words the message must contain)
CASES: list[tuple[str, Mutation, str, str]] = [
    ("broken-json", _write("definition.json", '{"name": "x",'), "definition.json", "invalid JSON at line 1"),
    ("json-not-object", _write("definition.json", "[1, 2]"), "definition.json", "expected a JSON object"),
    ("missing-definition", _remove("definition.json"), "definition.json", "definition not found"),
    ("missing-workloads", _remove("workloads.jsonl"), "workloads.jsonl", "workloads file not found"),
    ("empty-workloads", _write("workloads.jsonl", "\n"), "workloads.jsonl", "no workloads"),
    ("missing-field", _edit_definition(lambda d: d.pop("reference")), "definition.json", "missing field 'reference'"),
    ("wrong-type", _edit_definition(lambda d: d.update(axes=[1])), "definition.json", "field 'axes'"),
    ("undeclared-axis", _edit_definition(lambda d: d["inputs"]["x"].update(shape=["tokens", "width"])),
     "definition.json", 'uses undeclared axis "width"'),
    ("unknown-dtype", _edit_definition(lambda d: d["inputs"]["x"].update(dtype="float128")),
     "definition.json", "'float128'"),
    ("negative-const", _edit_definition(lambda d: d["axes"]["hidden"].update(value=-1)),
     "definition.json", "axes.hidden.const.value"),
    ("reference-without-run", _edit_definition(lambda d: d.update(reference="def go(x):\n    return x\n")),
     "definition.json", "top-level function named 'run'"),
    ("reference-syntax", _edit_definition(lambda d: d.update(reference="def run(:\n")),
     "definition.json", "reference is not valid Python"),
    ("constraint-unsafe", _edit_definition(lambda d: d.update(constraints=["__import__('os').system('x')"])),
     "definition.json", "constraint"),
    ("constraint-violated", _edit_definition(lambda d: d.update(constraints=["tokens <= 128"])),
     "workloads.jsonl:4", "constraint 'tokens <= 128' does not hold for hidden=2048, tokens=200"),
    ("constraint-unknown-axis", _edit_definition(lambda d: d.update(constraints=["tokens < rows"])),
     "definition.json", "undeclared axes ['rows']"),
    ("flops-bad", _edit_definition(lambda d: d["kloop"].update(flops="tokens.bit_length()")),
     "definition.json", "kloop.flops"),
    ("overlapping-names", _edit_definition(lambda d: d["outputs"].update(x=d["outputs"].pop("y"))),
     "definition.json", "overlap"),
    ("bad-range", _edit_definition(lambda d: d["kloop"]["input_ranges"].update(weight={"low": 2, "high": 1})),
     "definition.json", "low <= high"),
    ("kloop-typo", _edit_definition(lambda d: d["kloop"].update(tolerence={"atol": 1})),
     "definition.json", "field 'kloop.tolerence': Extra inputs are not permitted"),
    ("range-unknown-input", _edit_definition(lambda d: d["kloop"]["input_ranges"].update(bias={"low": 0, "high": 1})),
     "definition.json", "unknown inputs ['bias']"),
    ("workload-broken-json", _write("workloads.jsonl", '{"workload": {"uuid": "a", "axes": {"tokens": 1}, "inputs": {"x": {"type": "random"}, "weight": {"type": "random"}}}}\n{oops\n'),
     "workloads.jsonl:2", "invalid JSON"),
    ("workload-unknown-axis", _edit_workload_line(2, lambda d: d["workload"]["axes"].update(rows=3)),
     "workloads.jsonl:3", "unknown axis 'rows'"),
    ("workload-missing-var-axis", _edit_workload_line(0, lambda d: d["workload"].update(axes={})),
     "workloads.jsonl:1", "lacks var axes ['tokens']"),
    ("workload-const-mismatch", _edit_workload_line(1, lambda d: d["workload"]["axes"].update(hidden=7)),
     "workloads.jsonl:2", "const axis 'hidden' = 7"),
    ("workload-unknown-input", _edit_workload_line(4, lambda d: d["workload"]["inputs"].update(bias={"type": "random"})),
     "workloads.jsonl:5", "unknown input 'bias'"),
    ("workload-missing-input", _edit_workload_line(4, lambda d: d["workload"]["inputs"].pop("weight")),
     "workloads.jsonl:5", "no source for inputs ['weight']"),
    ("workload-bad-input-type", _edit_workload_line(0, lambda d: d["workload"]["inputs"].update(x={"type": "zeros"})),
     "workloads.jsonl:1", "inputs.x"),
    ("workload-negative-axis", _edit_workload_line(0, lambda d: d["workload"]["axes"].update(tokens=-4)),
     "workloads.jsonl:1", "axes.tokens"),
    ("workload-other-definition", _edit_workload_line(3, lambda d: d.update(definition="gemm")),
     "workloads.jsonl:4", "for definition 'gemm'"),
    ("workload-missing-safetensors",
     _edit_workload_line(0, lambda d: d["workload"]["inputs"].update(x={"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"})),
     "workloads.jsonl:1", "'blob/x.safetensors' not found"),
    ("workload-safetensors-escapes",
     _edit_workload_line(0, lambda d: d["workload"]["inputs"].update(x={"type": "safetensors", "path": "../x.safetensors", "tensor_key": "x"})),
     "workloads.jsonl:1", "escapes"),
    ("duplicate-uuid", lambda t: (t / "workloads.jsonl").write_text((t / "workloads.jsonl").read_text().splitlines()[0] * 1 + "\n" + (t / "workloads.jsonl").read_text().splitlines()[0] + "\n"),
     "workloads.jsonl:2", "duplicate workload uuid"),
    ("solution-unknown-language", _edit_baseline(lambda d: d["spec"].update(language="fortran")),
     "baseline/solution.json", "'fortran'"),
    ("solution-entry-without-separator", _edit_baseline(lambda d: d["spec"].update(entry_point="main.py")),
     "baseline/solution.json", "FILE::SYMBOL"),
    ("solution-entry-file-missing", _edit_baseline(lambda d: d["spec"].update(entry_point="other.py::run")),
     "baseline/solution.json", "entry file 'other.py' is not among the sources"),
    ("solution-dotdot", _edit_baseline(lambda d: d.update(sources=[{"path": "../definition.json"}])),
     "baseline/solution.json", "escapes its directory"),
    ("solution-absolute", _edit_baseline(lambda d: d.update(sources=[{"path": "/etc/passwd"}])),
     "baseline/solution.json", "is absolute"),
    ("solution-symlink-out", _symlink_source_outside, "baseline/solution.json", "points outside"),
    ("solution-source-missing", _remove("baseline/main.py"), "baseline/solution.json", "'main.py' not found"),
    ("solution-missing-manifest", _remove("baseline/solution.json"), "baseline/solution.json", "solution file not found"),
    ("solution-no-sources", _edit_baseline(lambda d: d.update(sources=[])), "baseline/solution.json", "field 'sources'"),
    ("solution-duplicate-source", _edit_baseline(lambda d: d.update(sources=[{"path": "main.py"}, {"path": "main.py"}])),
     "baseline/solution.json", "duplicate source path"),
    ("solution-bad-tunables", _edit_baseline(lambda d: d.update(kloop={"tunables": {"BLOCK": []}})),
     "baseline/solution.json", "has no values"),
    ("solution-wrong-definition", _edit_baseline(lambda d: d.update(definition="softmax")),
     "baseline", "solution is for definition 'softmax'"),
    ("solution-not-utf8", lambda t: (t / "baseline" / "main.py").write_bytes(b"\xff\xfe\x00bad"),
     "main.py", "not UTF-8"),
]


@pytest.mark.parametrize(("mutate", "where", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_loader_names_file_and_problem(rmsnorm_copy: Path, mutate: Mutation, where: str, words: str) -> None:
    mutate(rmsnorm_copy)
    with pytest.raises(BadInput) as caught:
        load_task(rmsnorm_copy)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.where.endswith(where) or where in caught.value.where, message
    assert words in message


@pytest.mark.parametrize(
    ("case_id"), ["broken-json", "undeclared-axis", "workload-unknown-axis", "solution-dotdot", "solution-symlink-out"]
)
def test_cli_task_show_exits_2_with_one_line(rmsnorm_copy: Path, case_id: str) -> None:
    _, mutate, where, words = next(c for c in CASES if c[0] == case_id)
    mutate(rmsnorm_copy)
    proc = subprocess.run([str(KLOOP), "task", "show", str(rmsnorm_copy)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kloop: error: ") and where in lines[0] and words in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_cli_missing_task_and_conflicting_arguments(tmp_path: Path) -> None:
    missing = subprocess.run([str(KLOOP), "task", "show", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and "task directory not found" in missing.stderr
    both = subprocess.run(
        [str(KLOOP), "task", "show", str(tmp_path), "--definition", "x"], capture_output=True, text=True
    )
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1


def test_solution_json_file_with_omitted_contents_reads_beside_it(rmsnorm_copy: Path) -> None:
    solution = load_solution(rmsnorm_copy / "baseline" / "solution.json")
    assert "for i in range" in solution.sources[0].content
    with pytest.raises(BadInput, match="solution not found"):
        load_solution(rmsnorm_copy / "nope.json")


def test_fib_root_problems_are_bad_input(shared_fixtures: Path, tmp_path: Path) -> None:
    root = shared_fixtures / "flashinfer-trace"
    with pytest.raises(BadInput, match="no definition named 'softmax'"):
        load_task_arg(None, fib_root=root, definition="softmax")
    with pytest.raises(BadInput, match="no workloads file for 'gdn_decode_qk4_v8_d128_k_last'"):
        load_task_arg(None, fib_root=root, definition="gdn_decode_qk4_v8_d128_k_last")
    with pytest.raises(BadInput, match="both --fib-root and --definition are needed"):
        load_task_arg(None, fib_root=root)
    with pytest.raises(BadInput, match="dataset root not found"):
        load_fib_task(tmp_path / "nowhere", "x")
    (tmp_path / "definitions").mkdir()
    (tmp_path / "definitions" / "a.json").write_text('{"name": "b"}')
    with pytest.raises(BadInput, match="missing field 'op_type'"):
        load_fib_task(tmp_path, "a")


def test_cli_shows_a_fib_root_definition(shared_fixtures: Path) -> None:
    proc = subprocess.run(
        [str(KLOOP), "task", "show", "--fib-root", str(shared_fixtures / "flashinfer-trace"),
         "--definition", "gemm_n4096_k4096", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    import json

    summary = json.loads(proc.stdout)
    assert summary["workloads"]["count"] == 43 and summary["inputs"]["A"]["shape"] == ["M", "K"]
    assert summary["outputs"]["C"]["tolerance"]["atol"] == 0.01 and summary["baseline"] is None


def test_oversized_and_special_source_files_are_refused(rmsnorm_copy: Path) -> None:
    baseline = rmsnorm_copy / "baseline"
    (baseline / "main.py").unlink()
    os.mkfifo(baseline / "main.py")  # reading a FIFO would block forever
    with pytest.raises(BadInput, match="not a regular file|is not a file"):
        load_solution(baseline)
    (baseline / "main.py").unlink()
    with open(baseline / "main.py", "wb") as handle:
        handle.truncate(65 * 1024 * 1024)  # sparse: large on paper, cheap on disk
    with pytest.raises(BadInput, match="more than the 67108864 allowed"):
        load_solution(baseline)


def test_task_help_lists_the_commands() -> None:
    proc = subprocess.run([str(KLOOP), "task", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    for command in ("show", "import-kernelbench", "pack"):
        assert command in proc.stdout
