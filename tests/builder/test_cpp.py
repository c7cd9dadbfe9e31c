"""cpp through the PyTorch C++ extension: cold build, warm load in a fresh process, named failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from kloop.builder import (
    BuildError,
    BuiltSolution,
    ToolchainMissing,
    UnsupportedBinding,
    build_solution,
    tvm_ffi_binding,
)
from kloop.task.load import load_solution
from tests.builder.conftest import make_solution, run_python

KERNEL = r"""
#include <ATen/core/Tensor.h>
#include <torch/csrc/utils/pybind.h>

// out = x * y + 1, written in place (destination passing)
void run(at::Tensor x, at::Tensor y, at::Tensor out) {
  TORCH_CHECK(x.is_contiguous() && y.is_contiguous() && out.is_contiguous(), "contiguous inputs expected");
  const float* a = x.data_ptr<float>();
  const float* b = y.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const int64_t n = x.numel();
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i] + 1.0f;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""
"""The narrowest headers a torch extension needs (the tensor, and pybind11 with torch's casters): a real cold
build through the PyTorch C++ extension, what this file is about, in 12 s here where `<torch/extension.h>`
(everything torch declares) took 40-60 s of the suite's one compile."""

CPP_SOLUTION = make_solution("cpp", {"kernel.cpp": KERNEL}, "kernel.cpp::run", dps=True)

SHARES_THE_BUILD = pytest.mark.xdist_group("cpp-build")
"""The tests that use `cpp_built` run on one xdist worker: a session fixture is per worker, so spread
over two they compiled the same extension twice."""


@pytest.fixture(scope="session")
def cpp_built(build_cache: Path) -> BuiltSolution:
    """The one cold C++ build of this suite (~12 s here)."""
    return build_solution(CPP_SOLUTION, device="cpu", cache_dir=build_cache)


@SHARES_THE_BUILD
def test_cpp_cold_build_computes(cpp_built: BuiltSolution) -> None:
    x, y = torch.randn(1000), torch.randn(1000)
    out = torch.full_like(x, float("nan"))
    cpp_built.fn(x, y, out)
    assert torch.allclose(out, x * y + 1)
    assert cpp_built.language == "cpp" and cpp_built.destination_passing and cpp_built.timing_meaningful
    assert (cpp_built.artifact_dir / "build" / "build.ninja").is_file()
    manifest = json.loads((cpp_built.artifact_dir / "manifest.json").read_text())
    assert manifest["key"] == cpp_built.cache_key and manifest["compile_seconds"] > 0


WARM = """
import json, torch
from kloop.builder import build_solution
from kloop.task.schema import Solution
built = build_solution(Solution.model_validate_json({solution!r}), device="cpu", cache_dir={cache!r})
x, y = torch.randn(64), torch.randn(64)
out = torch.empty_like(x)
built.fn(x, y, out)
print(json.dumps({{"hit": built.cache_hit, "key": built.cache_key, "seconds": built.build_seconds,
                  "ok": bool(torch.allclose(out, x * y + 1))}}))
"""


@SHARES_THE_BUILD
def test_cpp_warm_cache_loads_without_compiling(cpp_built: BuiltSolution, build_cache: Path) -> None:
    """A fresh process (as the sandbox is) loads the shared object; nothing is compiled again."""
    so_file = cpp_built.artifact_dir / json.loads((cpp_built.artifact_dir / "manifest.json").read_text())["shared_object"]
    before = so_file.stat().st_mtime_ns
    done = run_python(WARM.format(solution=CPP_SOLUTION.model_dump_json(), cache=str(build_cache)))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {**result, "hit": True, "key": cpp_built.cache_key, "ok": True}
    assert so_file.stat().st_mtime_ns == before


def test_cpp_compile_error_is_short_and_names_the_line(build_cache: Path) -> None:
    """The common mistake: forgetting <torch/extension.h>; the gcc error comes back, not a traceback."""
    broken = make_solution("cpp", {"kernel.cpp": "torch::Tensor run(torch::Tensor x) {\n  return x;\n}\n"},
                           "kernel.cpp::run")
    with pytest.raises(BuildError) as caught:
        build_solution(broken, device="cpu", cache_dir=build_cache)
    message = str(caught.value)
    assert message.startswith("cpp build failed:")
    assert "kernel.cpp:1:" in message and "error:" in message and "torch" in message
    assert str(build_cache) not in message and len(message.splitlines()) <= 14
    assert not list(build_cache.glob("*/.*")), "a failed build leaves no staging directory behind"


@SHARES_THE_BUILD
def test_missing_export_is_named(build_cache: Path, cpp_built: BuiltSolution) -> None:
    """Same sources (a cache hit), but the entry names a symbol the module does not export."""
    other = make_solution("cpp", {"kernel.cpp": KERNEL}, "kernel.cpp::forward", dps=True)
    with pytest.raises(BuildError, match=r"exports no 'forward'.*m\.def\(\"forward\", &forward\)"):
        build_solution(other, device="cpu", cache_dir=build_cache)


def test_hip_without_hipcc_is_a_build_error(build_cache: Path) -> None:
    if os.environ.get("ROCM_PATH") or Path("/opt/rocm/bin/hipcc").exists():
        pytest.skip("this machine has ROCm")
    solution = make_solution("hip", {"kernel.hip": "#include <torch/extension.h>\n"}, "kernel.hip::run")
    with pytest.raises(ToolchainMissing, match="hipcc not found"):
        build_solution(solution, device="cpu", cache_dir=build_cache)


def test_cuda_on_cpu_torch_points_to_compile_only_check(build_cache: Path) -> None:
    if torch.version.cuda:
        pytest.skip("this torch can build CUDA extensions")
    solution = make_solution("cuda", {"kernel.cu": "#include <torch/extension.h>\n"}, "kernel.cu::run")
    with pytest.raises(BuildError, match="no CUDA support.*check_compiles"):
        build_solution(solution, device="cpu", cache_dir=build_cache)


def test_tvm_ffi_example_is_refused_with_a_reason(shared_fixtures: Path, build_cache: Path) -> None:
    """FlashInfer-Bench's example agent solution includes tvm/ffi headers and declares no binding."""
    solution = load_solution(shared_fixtures / "flashinfer-trace" / "solutions" / "example_agent_solution.json")
    if tvm_ffi_binding.available():  # the binding is known; what is missing is a CUDA machine
        expected = BuildError, "no CUDA support"
    else:
        expected = UnsupportedBinding, "binding 'tvm-ffi' is not supported here: the apache-tvm-ffi package"
    if torch.version.cuda:
        pytest.skip("this machine can build CUDA")
    with pytest.raises(expected[0], match=expected[1]):
        build_solution(solution, device="sm_90", cache_dir=build_cache)
