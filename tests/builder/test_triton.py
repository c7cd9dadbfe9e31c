"""triton: a real row-softmax kernel runs correctly in Triton's interpreter on CPU tensors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.builder.conftest import make_solution, run_python

pytest.importorskip("triton")

SOFTMAX = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def run(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](out, x, cols, x.stride(0), BLOCK=${BLOCK})
'''

SCRIPT = """
import json, os, torch
from kloop.builder import build_solution
from kloop.task.schema import Solution
solution = Solution.model_validate_json({solution!r})
built = build_solution(solution, device="cpu", cache_dir={cache!r})
x = torch.randn(7, 37)
out = torch.full_like(x, float("nan"))
built.fn(x, out)
print(json.dumps({{"max_err": (out - torch.softmax(x, dim=1)).abs().max().item(),
                  "timing_meaningful": built.timing_meaningful, "dps": built.destination_passing,
                  "interpret": os.environ.get("TRITON_INTERPRET"), "notes": built.notes}}))
"""


def test_triton_row_softmax_in_interpreter(build_cache: Path) -> None:
    solution = make_solution("triton", {"softmax.py": SOFTMAX}, "softmax.py::run", dps=True,
                             tunables={"BLOCK": [64, 128]})
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = run_python(SCRIPT.format(solution=solution.model_dump_json(), cache=str(build_cache)), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["max_err"] < 1e-5
    assert result["timing_meaningful"] is False and result["dps"] is True
    assert result["interpret"] == "1"
    assert result["notes"] == ["triton on cpu: timing not meaningful"]
