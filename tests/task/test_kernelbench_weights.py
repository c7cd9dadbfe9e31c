"""--weights-as-inputs: the model's tensors become task inputs, stored once as the reference draws them."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from kloop.task.inputs import make_inputs
from kloop.task.kernelbench import import_kernelbench
from kloop.task.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]
CONV = ROOT / "examples" / "kernelbench" / "problems" / "level2_1_Conv2D_ReLU_BiasAdd.py"


def test_weights_become_inputs_named_after_the_init_sizes(tmp_path: Path) -> None:
    task = import_kernelbench(CONV, tmp_path / "t", max_bytes=2_000_000, weights_as_inputs=True)
    d = task.definition
    assert list(d.inputs) == ["x", "bias", "conv_weight", "conv_bias"]
    assert d.inputs["conv_weight"].shape == ["out_channels", "in_channels", "kernel_size", "kernel_size"]
    assert d.inputs["conv_bias"].shape == ["out_channels"] and d.var_axes == ["batch_size"]
    stored = load_file(str(tmp_path / "t" / "weights.safetensors"))
    namespace: dict = {}
    exec(compile(d.reference, "reference", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    assert torch.equal(stored["conv_weight"], model.conv.weight) and torch.equal(stored["bias"], model.bias)
    for workload in task.workloads:
        inputs = make_inputs(d, workload, seed=5, task_root=task.root)
        assert torch.equal(inputs["conv_weight"], stored["conv_weight"])
        with torch.no_grad():
            assert torch.allclose(run_reference(d, inputs)["output"], model(inputs["x"]), atol=1e-6)


def test_the_reference_computes_with_the_weights_it_is_given(tmp_path: Path) -> None:
    d = import_kernelbench(CONV, tmp_path / "t", max_bytes=2_000_000, weights_as_inputs=True).definition
    g = torch.Generator().manual_seed(3)
    x = torch.rand(2, 8, 24, 24, generator=g, dtype=torch.float64)
    w, b, bias = (torch.randn(24, 8, 3, 3, generator=g, dtype=torch.float64), torch.randn(24, generator=g, dtype=torch.float64),
                  torch.randn(24, 1, 1, generator=g, dtype=torch.float64))  # fmt: skip
    got = run_reference(d, {"x": x, "bias": bias, "conv_weight": w, "conv_bias": b})["output"]
    assert got.dtype == torch.float64 and torch.allclose(got, F.conv2d(x, w, b).relu() + bias)
    ranges = d.settings.input_ranges["conv_weight"]  # held-out draws: PyTorch's own init range
    assert -0.12 < ranges.low < 0 < ranges.high < 0.12
