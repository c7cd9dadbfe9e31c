"""Cold build vs warm cache load of a small C++ extension (run by hand; prints seconds).

    .venv/bin/python bench/build_cache_bench.py [--cache DIR] [--binding torch|tvm-ffi]

Cold: a fresh cache directory, gcc + ninja compile the extension. Warm: a fresh Python process
(as the verifier's sandbox is) loads the same build from the cache; reported both as the
build_solution time after torch is imported and as the whole process wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = r"""
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x, torch::Tensor y) {
  auto out = torch::empty_like(x);
  const float* a = x.data_ptr<float>(); const float* b = y.data_ptr<float>(); float* o = out.data_ptr<float>();
  #pragma omp parallel for
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] * b[i] + 1.0f;
  return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""

TVM_FFI_KERNEL = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
void run(tvm::ffi::TensorView x, tvm::ffi::TensorView y, tvm::ffi::TensorView out) {
  const float* a = static_cast<const float*>(x.data_ptr()); const float* b = static_cast<const float*>(y.data_ptr());
  float* o = static_cast<float*>(out.data_ptr());
  #pragma omp parallel for
  for (int64_t i = 0; i < x.size(0); ++i) o[i] = a[i] * b[i] + 1.0f;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
"""

CHILD = """
import json, sys, time, torch
from kloop.builder import build_solution
from kloop.task.schema import Solution
solution = Solution.model_validate_json(sys.argv[1])
began = time.perf_counter()
built = build_solution(solution, device="cpu", cache_dir=sys.argv[2])
seconds = time.perf_counter() - began
x = torch.randn(4096); y = torch.randn(4096)
if built.destination_passing:
    out = torch.empty_like(x); built.fn(x, y, out)
else:
    out = built.fn(x, y)
assert torch.allclose(out, x * y + 1)
print(json.dumps({"hit": built.cache_hit, "build_solution_s": round(seconds, 4)}))
"""


def _child(solution_json: str, cache: Path) -> dict:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, solution_json, str(cache)], capture_output=True,
                          text=True, check=True)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "process_s": round(time.perf_counter() - began, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="cache dir (default: a fresh temp dir)")
    parser.add_argument("--binding", choices=("torch", "tvm-ffi"), default="torch")
    args = parser.parse_args()
    from kloop.task.schema import Solution

    tvm = args.binding == "tvm-ffi"
    solution = Solution.model_validate({
        "name": "bench_axpy", "definition": "bench", "author": "bench",
        "spec": {"language": "cpp", "target_hardware": ["cpu"], "entry_point": "kernel.cpp::run",
                 "destination_passing_style": tvm, "binding": args.binding},
        "sources": [{"path": "kernel.cpp", "content": TVM_FFI_KERNEL if tvm else KERNEL}]})
    cache = args.cache or Path(tempfile.mkdtemp(prefix="kloop-bench-cache-"))
    cold = _child(solution.model_dump_json(), cache)
    warm = [_child(solution.model_dump_json(), cache) for _ in range(3)]
    print(json.dumps({"binding": args.binding, "cache": str(cache), "cold": cold, "warm": warm}, indent=2))


if __name__ == "__main__":
    main()
