"""Binding tvm-ffi (FlashInfer-Bench's TVM-FFI ABI) where apache-tvm-ffi is installed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kloop.builder import BuildError, build_solution, check_compiles, tvm_ffi_binding
from kloop.device import which
from kloop.task.load import load_solution
from tests.builder.conftest import make_solution

pytestmark = pytest.mark.skipif(not tvm_ffi_binding.available(), reason="apache-tvm-ffi not installed")

ROW_SUM = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

// out[r] = sum_c x[r, c]; destination passing, float32, contiguous
void row_sum(tvm::ffi::TensorView x, tvm::ffi::TensorView out) {
  TVM_FFI_ICHECK_EQ(x.ndim(), 2) << "x must be 2-D";
  TVM_FFI_ICHECK(x.dtype().code == kDLFloat && x.dtype().bits == 32) << "x must be float32";
  const float* a = static_cast<const float*>(x.data_ptr());
  float* o = static_cast<float*>(out.data_ptr());
  for (int64_t r = 0; r < x.size(0); ++r) {
    float acc = 0.0f;
    for (int64_t c = 0; c < x.size(1); ++c) acc += a[r * x.size(1) + c];
    o[r] = acc;
  }
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(row_sum, row_sum);
"""


def test_cpp_with_tvm_ffi_builds_and_computes(build_cache: Path) -> None:
    solution = make_solution("cpp", {"kernel.cpp": ROW_SUM}, "kernel.cpp::row_sum", dps=True, binding="tvm-ffi")
    built = build_solution(solution, device="cpu", cache_dir=build_cache)
    x = torch.randn(5, 33)
    out = torch.full((5,), float("nan"))
    built.fn(x, out)
    assert torch.allclose(out, x.sum(dim=1), atol=1e-5)
    with pytest.raises(Exception, match="x must be 2-D"):  # the kernel's own check reaches Python
        built.fn(torch.ones(3), out)
    assert build_solution(solution, device="cpu", cache_dir=build_cache).cache_hit


def test_missing_tvm_ffi_export_is_named(build_cache: Path) -> None:
    solution = make_solution("cpp", {"kernel.cpp": ROW_SUM}, "kernel.cpp::col_sum", dps=True, binding="tvm-ffi")
    with pytest.raises(BuildError, match=r"exports no 'col_sum'.*TVM_FFI_DLL_EXPORT_TYPED_FUNC\(col_sum, col_sum\)"):
        build_solution(solution, device="cpu", cache_dir=build_cache)


@pytest.mark.skipif(which("nvcc") is None, reason="nvcc not installed")
def test_flashinfer_bench_example_compiles_for_sm90(shared_fixtures: Path) -> None:
    """The real FIB example (WMMA GEMM, tvm/ffi headers, no binding declared) compiles with nvcc."""
    solution = load_solution(shared_fixtures / "flashinfer-trace" / "solutions" / "example_agent_solution.json")
    check = check_compiles(solution, arch="sm_90")
    assert check.objects == ["kernel.cu"]


def test_tvm_ffi_compile_error_is_the_compiler_line(build_cache: Path) -> None:
    broken = ("#include <tvm/ffi/function.h>\nint f(int x) { return undefined_thing + x; }\n"
              "TVM_FFI_DLL_EXPORT_TYPED_FUNC(f, f);\n")
    solution = make_solution("cpp", {"kernel.cpp": broken}, "kernel.cpp::f", binding="tvm-ffi")
    with pytest.raises(BuildError) as caught:
        build_solution(solution, device="cpu", cache_dir=build_cache)
    assert str(caught.value).startswith("cpp build failed:\nkernel.cpp:2:")
    assert "undefined_thing" in str(caught.value) and str(build_cache) not in str(caught.value)
