"""On a GPU machine: cuda builds end to end and triton runs compiled (timing meaningful).

Skipped without a GPU; bench/device_check.sh runs them on the device machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from kloop.builder import build_solution
from tests.builder.conftest import make_solution, run_python
from tests.builder.test_cuda_check import TORCH_BOUND
from tests.builder.test_triton import SCRIPT, SOFTMAX

pytestmark = pytest.mark.gpu


def test_cuda_extension_builds_for_this_gpu_and_computes(build_cache: Path) -> None:
    if not torch.version.cuda:
        pytest.skip("not a CUDA build of torch")
    solution = make_solution("cuda", {"kernel.cu": TORCH_BOUND}, "kernel.cu::run", dps=True)
    built = build_solution(solution, device="cuda", cache_dir=build_cache)
    a, b = torch.randn(10_000, device="cuda"), torch.randn(10_000, device="cuda")
    out = torch.full_like(a, float("nan"))
    built.fn(a, b, out)
    torch.cuda.synchronize()
    assert torch.equal(out, a + b) and built.timing_meaningful
    major, minor = torch.cuda.get_device_capability()
    by_arch = build_solution(solution, device=f"sm_{major}{minor}", cache_dir=build_cache)
    assert by_arch.cache_hit and by_arch.cache_key == built.cache_key  # "cuda" resolves to this GPU's arch


def test_triton_compiles_on_the_gpu(build_cache: Path) -> None:
    solution = make_solution("triton", {"softmax.py": SOFTMAX}, "softmax.py::run", dps=True,
                             tunables={"BLOCK": [64, 128]})
    script = SCRIPT.replace('device="cpu"', 'device="cuda"').replace(
        "x = torch.randn(7, 37)", "x = torch.randn(7, 37, device='cuda')")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = run_python(script.format(solution=solution.model_dump_json(), cache=str(build_cache)), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["max_err"] < 1e-5 and result["timing_meaningful"] is True and result["interpret"] is None
