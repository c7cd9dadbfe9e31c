"""The build-cache key hashes what the build really uses: resolved binding, per-binding flags, link flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.builder import BuildError, build_solution, cache_key, tvm_ffi_binding
from kloop.builder.extension import FLAGS, TorchExtensionBuilder, build_flags
from kloop.device.schema import DeviceKind
from tests.builder.conftest import make_solution

KERNEL = {"kernel.cpp": "void run() {}\n"}
TVM_KERNEL = {"kernel.cpp": (
    "#include <tvm/ffi/function.h>\n"
    "int row_id(int x) { return x; }\n"
    "TVM_FFI_DLL_EXPORT_TYPED_FUNC(row_id, row_id);\n"
)}


def _real_key(solution) -> str:  # noqa: ANN001
    """The key build_solution computes: the extension builder's own fingerprint, on this machine."""
    fingerprint = TorchExtensionBuilder().fingerprint(solution, DeviceKind.CPU, "x86_64")
    return cache_key(solution, kind="cpu", arch="x86_64", toolchain=fingerprint)


def _with_dependencies(solution, deps: list[str]):  # noqa: ANN001, ANN202
    return solution.model_copy(update={"spec": solution.spec.model_copy(update={"dependencies": deps})})


def test_binding_null_and_torch_share_a_key_and_tvm_ffi_does_not() -> None:
    null, torch_ = (make_solution("cpp", KERNEL, "kernel.cpp::run", binding=b) for b in (None, "torch"))
    tvm = make_solution("cpp", KERNEL, "kernel.cpp::run", binding="tvm-ffi")
    assert _real_key(null) == _real_key(torch_) != _real_key(tvm)


def test_the_tvm_ffi_flag_table_enters_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    tvm = make_solution("cpp", KERNEL, "kernel.cpp::run", binding="tvm-ffi")
    host, device, link = build_flags(tvm)
    assert (host, device, link) == tvm_ffi_binding.BACKENDS["cpp"][1:]
    before = _real_key(tvm)
    monkeypatch.setitem(FLAGS, "cpp", (("-O1",), (), ()))  # the torch path's table: not this build's
    assert _real_key(tvm) == before
    monkeypatch.setitem(tvm_ffi_binding.BACKENDS, "cpp", (None, ("-O1", "-fopenmp"), (), ("-fopenmp",)))
    assert _real_key(tvm) != before


def test_dependency_link_flags_enter_the_key_on_both_paths() -> None:
    for binding in ("torch", "tvm-ffi"):
        plain = make_solution("cpp", KERNEL, "kernel.cpp::run", binding=binding)
        linked = _with_dependencies(plain, ["cublas"])
        assert "-lcublas" in build_flags(linked)[2] and "-lcublas" not in build_flags(plain)[2]
        assert _real_key(linked) != _real_key(plain)


@pytest.mark.skipif(not tvm_ffi_binding.available(), reason="apache-tvm-ffi not installed")
def test_the_tvm_ffi_build_passes_the_link_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dependency's -l flag reaches the tvm-ffi linker: the same sources link alone, not with a missing library."""
    from kloop.builder import extension

    plain = make_solution("cpp", TVM_KERNEL, "kernel.cpp::row_id", binding="tvm-ffi")
    assert build_solution(plain, device="cpu", cache_dir=tmp_path).fn(7) == 7
    monkeypatch.setitem(extension.DEPENDENCY_LDFLAGS, "no_such_lib_kloop", ("-lno_such_lib_kloop",))
    with pytest.raises(BuildError, match="ld returned 1 exit status"):
        build_solution(_with_dependencies(plain, ["no_such_lib_kloop"]), device="cpu", cache_dir=tmp_path)
