"""Kernel-name normalization on names real tools printed (fixtures) and on known tool forms."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kloop.profile.names import demangle, normalize_kernel_name


def _ncu_names(path: Path) -> set[str]:
    lines = path.read_text(errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    return {row["Kernel Name"] for row in csv.DictReader(lines[start:]) if row.get("Kernel Name")}


def test_ncu_csv_names(shared_fixtures: Path) -> None:
    h200 = shared_fixtures / "ncu" / "h200"
    got = {
        case: {normalize_kernel_name(n) for n in _ncu_names(h200 / case / "details.csv")}
        for case in ("copy_strided", "copy_vec4", "transpose_conflict", "triton_softmax", "torch_mm_bf16")
    }
    assert got == {
        "copy_strided": {"copy_strided"},
        "copy_vec4": {"copy_vec4"},
        "transpose_conflict": {"transpose_conflict"},
        "triton_softmax": {"softmax_rows"},
        "torch_mm_bf16": {"nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"},
    }


def test_rocprofv3_names(shared_fixtures: Path) -> None:
    rows = csv.DictReader((shared_fixtures / "amd" / "rocprofv3" / "kernel_trace.csv").open())
    names = {normalize_kernel_name(row["Kernel_Name"]) for row in rows}
    assert {"addition_kernel", "subtract_kernel", "multiply_kernel", "divide_kernel"} <= names
    assert all("(" not in n and "<" not in n for n in names)


def test_rocprof_compute_names_across_rocm_versions(shared_fixtures: Path) -> None:
    """ROCm 6.0 prints "[clone .kd]", ROCm 6.1 "(.kd)": both are the same kernel."""
    root = shared_fixtures / "amd" / "rocprof-compute"
    raw = {row["Kernel_Name"] for p in root.glob("*/*/pmc_perf.csv") for row in csv.DictReader(p.open())}
    assert any("[clone .kd]" in n for n in raw) and any("(.kd)" in n for n in raw)
    assert {normalize_kernel_name(n) for n in raw} == {"vecCopy"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("void addition_kernel<float>(float*, float const*, float const*, int, int)", "addition_kernel"),
        ("_Z7vecCopyPdS_S_ii", "vecCopy"),
        ("_Z7vecCopyPdS_S_ii.kd", "vecCopy"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "vectorized_elementwise_kernel",
        ),
        (
            "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align1>"
            "(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align1::Params)",
            "cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align1",
        ),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, 7>(float*, float const*, int)",
            "softmax_warp_forward",
        ),
        ("add_kernel_0d1d2d3de", "add_kernel"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
        ("__omp_offloading_fd00_2c8a1f_saxpy_l42", "saxpy_l42"),
        ("__omp_offloading_10302_b2c3d4_saxpy_l42.kd", "saxpy_l42"),
        ("matmul_kernel_9f86d081884c7d659a2feaa0c55ad015", "matmul_kernel"),
        ("foo.lto_priv.0", "foo"),
        ("softmax_rows", "softmax_rows"),
        ("_Z9copy_vec4PK6float4PS_m", "copy_vec4"),
        (
            "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
            "at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)"
            "::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> >"
            "(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})",
            "elementwise_kernel",
        ),
        (
            "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm<128, 64> >(ck::GridwiseGemm<128, 64>::Argument)",
            "kernel_gemm_xdl_cshuffle_v3",
        ),
        ("kernel_2", "kernel_2"),
    ],
)
def test_tool_forms(raw: str, expected: str) -> None:
    assert normalize_kernel_name(raw) == expected


def test_same_kernel_from_ncu_and_rocprof_matches() -> None:
    ncu = "void addition_kernel<float>(float *, const float *, const float *, int, int)"
    rocprof = "void addition_kernel<float>(float*, float const*, float const*, int, int) (.kd)"
    assert normalize_kernel_name(ncu) == normalize_kernel_name(rocprof)


def test_demangle_leaves_unmangled_and_invalid_names() -> None:
    assert demangle("vecCopy") == "vecCopy"
    assert demangle("_Zbad") == "_Zbad"
    assert demangle("_Z7vecCopyPdS_S_ii") == "vecCopy(double*, double*, double*, int, int)"


def test_demangling_without_the_python_binding_uses_cpp_filt_or_keeps_the_name() -> None:
    """Device machines can't install cxxfilt: names must still normalize the same way (or stay raw)."""
    import shutil
    import subprocess
    import sys

    mangled = "_ZN7cutlass6KernelI4GemmEEvNT_6ParamsE"
    code = (
        "import sys; sys.modules['cxxfilt'] = None\n"
        "from kloop.profile.names import normalize_kernel_name\n"
        f"print(normalize_kernel_name({mangled!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    from kloop.profile.names import normalize_kernel_name

    expected = normalize_kernel_name(mangled) if shutil.which("c++filt") else mangled
    assert out == expected
