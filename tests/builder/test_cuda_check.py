"""cuda compile-only: nvcc compiles a real kernel for sm_90 here, and a broken one fails with nvcc's error."""

from __future__ import annotations

import pytest

from kloop.builder import BuildError, ToolchainMissing, check_compiles
from kloop.device import which
from tests.builder.conftest import make_solution

pytestmark = pytest.mark.skipif(which("nvcc") is None, reason="nvcc not installed")

SAXPY = r"""
#include <cuda_runtime.h>
#include <cstdint>

__global__ void saxpy_kernel(float a, const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" void saxpy(float a, const float* x, float* y, int64_t n, cudaStream_t stream) {
  const int threads = 256;
  saxpy_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, stream>>>(a, x, y, n);
}
"""

TORCH_BOUND = r"""
#include <torch/extension.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

void run(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
  const int64_t n = a.numel();
  add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""

BROKEN = r"""
__global__ void scale_kernel(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * undeclared_factor;
}
"""


def test_small_kernel_compiles_for_sm90() -> None:
    check = check_compiles(make_solution("cuda", {"saxpy.cu": SAXPY}, "saxpy.cu::saxpy"), arch="sm_90")
    assert check.objects == ["saxpy.cu"] and check.arch == "sm_90"
    assert "-gencode=arch=compute_90,code=sm_90" in check.commands[0]


def test_broken_kernel_reports_the_nvcc_error() -> None:
    with pytest.raises(BuildError) as caught:
        check_compiles(make_solution("cuda", {"scale.cu": BROKEN}, "scale.cu::run"), arch="sm_90")
    message = str(caught.value)
    assert message.startswith("cuda compile for sm_90 failed:")
    assert "scale.cu(4)" in message and 'identifier "undeclared_factor" is undefined' in message


def test_bad_arch_is_named() -> None:
    with pytest.raises(BuildError, match="sm_90 or sm_90a, got 'gfx942'"):
        check_compiles(make_solution("cuda", {"saxpy.cu": SAXPY}, "saxpy.cu::saxpy"), arch="gfx942")


@pytest.mark.slow
def test_torch_bound_kernel_compiles_for_sm90a() -> None:
    """The binding convention (torch/extension.h + PYBIND11_MODULE) under nvcc; ~60-90 s here."""
    check = check_compiles(make_solution("cuda", {"kernel.cu": TORCH_BOUND}, "kernel.cu::run"), arch="sm_90a")
    assert check.objects == ["kernel.cu"]


def test_hip_check_without_hipcc_names_the_missing_compiler() -> None:
    if which("hipcc") is not None:
        pytest.skip("hipcc is installed")
    solution = make_solution("hip", {"kernel.hip": BROKEN}, "kernel.hip::run")
    with pytest.raises(ToolchainMissing, match="hipcc not found"):
        check_compiles(solution, arch="gfx942")
