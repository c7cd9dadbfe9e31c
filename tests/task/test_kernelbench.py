"""KernelBench problems become tasks whose reference (and baseline) run the problem's Model."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
import torch

from kloop.errors import BadInput
from kloop.task.inputs import make_inputs
from kloop.task.kernelbench import import_kernelbench
from kloop.task.load import load_task
from kloop.task.reference import run_reference

DATA = Path(__file__).parent / "data"
KLOOP = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kloop"


def _problem_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_linear_relu_problem_becomes_a_task_with_a_var_batch(tmp_path: Path) -> None:
    task = import_kernelbench(DATA / "kb_gemm_relu_scale.py", tmp_path / "task")
    d = task.definition
    assert d.name == "kb_gemm_relu_scale"
    assert d.var_axes == ["batch_size"] and d.const_axes == {"in_features": 64, "out_features": 48}
    assert d.inputs["x"].shape == ["batch_size", "in_features"]
    assert d.outputs["output"].shape == ["batch_size", "out_features"]
    assert sorted(w.axes["batch_size"] for w in task.workloads) == [6, 12, 24]
    assert task.baseline is not None and task.baseline.spec.language.value == "python"

    problem = _problem_module(DATA / "kb_gemm_relu_scale.py")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs())
    for workload in task.workloads:
        inputs = make_inputs(d, workload, seed=17, task_root=task.root)
        got = run_reference(d, inputs)["output"]
        with torch.no_grad():
            assert torch.equal(got, model(inputs["x"]))
    # on the CPU the supervisor may upcast: the reference follows the inputs' dtype
    x64 = make_inputs(d, task.workloads[0], seed=1)["x"].double()
    out64 = run_reference(d, {"x": x64})["output"]
    assert out64.dtype == torch.float64
    assert torch.allclose(out64.float(), run_reference(d, {"x": x64.float()})["output"], atol=1e-5)


def test_integer_targets_keep_their_observed_range_and_scalar_output(tmp_path: Path) -> None:
    task = import_kernelbench(DATA / "kb_cross_entropy.py", tmp_path / "ce")
    d = task.definition
    assert d.inputs["targets"].dtype.value == "int64"
    assert d.outputs["output"].shape == []
    targets_range = d.settings.input_ranges["targets"]
    assert targets_range.low >= 0 and targets_range.high <= 9
    inputs = make_inputs(d, task.workloads[0], seed=3)
    assert int(inputs["targets"].max()) <= 9  # cross_entropy would fail on an out-of-range class
    loss = run_reference(d, inputs)["output"]
    assert loss.shape == () and torch.isfinite(loss)


def test_bad_problem_files_are_bad_input(tmp_path: Path) -> None:
    no_inputs = tmp_path / "no_inputs.py"
    no_inputs.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(BadInput, match="must define get_inputs"):
        import_kernelbench(no_inputs, tmp_path / "a")
    broken = tmp_path / "broken.py"
    broken.write_text("class Model(:\n")
    with pytest.raises(BadInput, match="not valid Python"):
        import_kernelbench(broken, tmp_path / "b")
    crashing = tmp_path / "crashing.py"
    crashing.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x @ x\n"
        "def get_inputs():\n    return [torch.randn(3, 4)]\ndef get_init_inputs():\n    return []\n"
    )
    with pytest.raises(BadInput, match="running Model on get_inputs\\(\\) failed: RuntimeError"):
        import_kernelbench(crashing, tmp_path / "c")
    complex_out = tmp_path / "complex.py"
    complex_out.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.double()\n"
        "def get_inputs():\n    return [torch.randn(3, 4)]\ndef get_init_inputs():\n    return []\n"
    )
    with pytest.raises(BadInput, match="torch.float64 values have no FlashInfer-Trace dtype"):
        import_kernelbench(complex_out, tmp_path / "d")


def test_cli_import_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("x")
    proc = subprocess.run(
        [str(KLOOP), "task", "import-kernelbench", str(DATA / "kb_cross_entropy.py"), "-o", str(tmp_path / "busy")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "not empty" in proc.stderr and "Traceback" not in proc.stderr
    ok = subprocess.run(
        [str(KLOOP), "task", "import-kernelbench", str(DATA / "kb_cross_entropy.py"), "-o", str(tmp_path / "new")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert load_task(tmp_path / "new").definition.name == "kb_cross_entropy"


def test_axes_are_named_after_module_arithmetic_and_positive_inputs_keep_their_range(tmp_path: Path) -> None:
    task = import_kernelbench(DATA / "kb_matmul_large_k.py", tmp_path / "mm")
    d = task.definition
    assert d.inputs["A"].shape == ["M", "K"] and d.inputs["B"].shape == ["K", "N"]
    assert d.outputs["output"].shape == ["M", "N"]
    assert d.var_axes == ["M"] and d.const_axes == {"K": 512, "N": 24}
    assert d.settings.input_ranges["A"].low == 0.0  # torch.rand inputs stay non-negative
    inputs = make_inputs(d, task.workloads[1], seed=0)
    assert inputs["A"].min() >= 0 and inputs["A"].shape == (16, 512)
    assert torch.allclose(run_reference(d, inputs)["output"], inputs["A"] @ inputs["B"])
