"""KernelBench import at any size: module sizes read and scaled from the source, memory estimated
on the meta device before allocating, one-line refusals that name a scale that fits, axes named
after get_inputs()' own variables or by role. Real problem files from KernelBench (MIT) live in
examples/kernelbench/problems."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.task import kb_source
from kloop.task.kb_memory import footprint
from kloop.task.kernelbench import DEFAULT_MEMORY_MB, import_kernelbench

ROOT = Path(__file__).resolve().parents[2]
KLOOP = ROOT / ".venv" / "bin" / "kloop"
PROBLEMS = ROOT / "examples" / "kernelbench" / "problems"

SIZES = """
import torch
batch_size = 16
height = width = 128
M, N = 64, 8
K = M * 2
input_shape = (4096,)
dim = 1
"""


def test_module_sizes_read_chained_unpacked_derived_and_tuple_assignments() -> None:
    sizes = kb_source.module_sizes(SIZES)
    assert sizes.ints == {"batch_size": 16, "height": 128, "width": 128, "M": 64, "N": 8, "K": 128, "dim": 1}
    assert sizes.tuples == {"input_shape": (4096,)}
    scaled, changes = kb_source.scale_source(SIZES, {"batch_size", "height", "width", "M", "K", "input_shape", "dim"}, 0.5)
    after = kb_source.module_sizes(scaled)
    # derived K follows M, the chained literal is rewritten once for both names, small sizes stay
    assert after.ints == {"batch_size": 8, "height": 64, "width": 64, "M": 32, "N": 8, "K": 64, "dim": 1}
    assert after.tuples == {"input_shape": (2048,)}
    assert changes["height"] == changes["width"] == (128, 64) and "dim" not in changes and "K" not in changes


def test_default_memory_limit_matches_the_verifier() -> None:
    from kloop.verify.result import VerifyOptions

    assert VerifyOptions().memory_limit_mb == DEFAULT_MEMORY_MB


def test_a_problem_too_big_for_the_sandbox_is_refused_in_one_line_naming_a_scale_that_fits(tmp_path: Path) -> None:
    relu = PROBLEMS / "level1_19_ReLU.py"  # KernelBench's default: 4096 x 393,216 floats, 6.4 GB per tensor
    est = footprint(relu, relu.read_text())
    assert est is not None and est.inputs == est.outputs == 4096 * 393216 * 4  # measured on meta, nothing allocated
    proc = subprocess.run([str(KLOOP), "task", "import-kernelbench", str(relu), "-o", str(tmp_path / "big")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "8192 MB" in proc.stderr
    scale = float(re.search(r"--scale ([0-9.e-]+)", proc.stderr).group(1))
    assert not (tmp_path / "big" / "definition.json").exists()
    with pytest.raises(BadInput, match="--scale"):  # a bigger factor than the one named does not fit either
        import_kernelbench(relu, tmp_path / "over", scale=min(1.0, scale * 1.6), memory_mb=DEFAULT_MEMORY_MB)
    est_ok = footprint(relu, kb_source.scale_source(relu.read_text(), {"batch_size", "dim"}, scale)[0])
    assert est_ok is not None and est_ok.sandbox <= DEFAULT_MEMORY_MB * (1 << 20) / 2


def test_max_bytes_picks_a_scale_whose_data_fits(tmp_path: Path) -> None:
    task = import_kernelbench(PROBLEMS / "level1_19_ReLU.py", tmp_path / "relu", max_bytes=2_000_000)
    d = task.definition
    assert d.var_axes == ["batch_size"] and set(d.const_axes) == {"dim"}
    rows = max(w.axes["batch_size"] for w in task.workloads)
    assert 2 * rows * d.const_axes["dim"] * 4 <= 2_000_000  # input plus output, float32
    assert "batch_size 4096 ->" in d.reference.splitlines()[0]  # the reference says what was scaled


NAMING = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, reduce_dim):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.reduce_dim = reduce_dim

    def forward(self, x, y):
        return self.conv(x), torch.sum(y, dim=self.reduce_dim, keepdim=True)

batch_size = 4
in_channels = 3
out_channels = 6
height = width = 10
features = 8
dim1 = dim2 = 12
kernel_size = 3
reduce_dim = 1

def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    y = torch.rand(batch_size, features, dim1, dim2)
    return [x, y]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, reduce_dim]
"""


def test_axes_come_from_get_inputs_variables_or_their_role_never_from_coincidence(tmp_path: Path) -> None:
    file = tmp_path / "naming.py"
    file.write_text(NAMING)
    d = import_kernelbench(file, tmp_path / "task").definition
    assert d.inputs["x"].shape == ["batch_size", "in_channels", "height", "width"]  # height == width, two axes
    assert d.inputs["y"].shape == ["batch_size", "features", "dim1", "dim2"]
    assert d.outputs["output0"].shape == ["batch_size", "out_channels", "output0_dim2", "output0_dim3"]
    assert d.outputs["output1"].shape == ["batch_size", "output1_dim1", "dim1", "dim2"]  # not `reduce_dim`
    assert d.const_axes["output1_dim1"] == 1 and d.const_axes["output0_dim2"] == 8
    assert not any(re.fullmatch(r"d\d+", a) for a in d.axes)


@pytest.mark.parametrize("name", ["layernorm", "conv2d_relu_biasadd"])
def test_shipped_examples_are_what_the_importer_makes(tmp_path: Path, name: str) -> None:
    """The examples are reproducible from the real problem files (make.sh's arguments)."""
    line = next(x for x in (ROOT / "examples" / "kernelbench" / "make.sh").read_text().splitlines() if x.startswith(name + " "))
    _, file, max_bytes = line.split()
    task = import_kernelbench(PROBLEMS / file, tmp_path / name, name=f"kb_{name}", max_bytes=int(max_bytes))
    shipped = json.loads((ROOT / "examples" / "kernelbench" / name / "definition.json").read_text())
    made = json.loads((task.root / "definition.json").read_text())
    assert made == shipped


def test_max_bytes_also_fits_the_parameters(tmp_path: Path) -> None:
    """level3/1_MLP's 12 MB of data fit 16 MB, but its 2.5 GB of weights do not fit the sandbox: shrink both."""
    mlp = PROBLEMS / "level3_1_MLP.py"
    with pytest.raises(BadInput, match=r"parameters 2.5 GB.*use --scale"):
        import_kernelbench(mlp, tmp_path / "full")
    task = import_kernelbench(mlp, tmp_path / "mlp", max_bytes=16 << 20)
    assert "layer_sizes[0] 16384 ->" in task.definition.reference.splitlines()[0]
    est = footprint(mlp, task.definition.reference)
    assert est is not None and est.data <= 16 << 20 and est.sandbox <= DEFAULT_MEMORY_MB * (1 << 20) / 2
