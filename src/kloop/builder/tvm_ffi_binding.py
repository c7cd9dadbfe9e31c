"""Binding `tvm-ffi`: FlashInfer-Bench's TVM-FFI ABI, built with the apache-tvm-ffi package.

Sources include `<tvm/ffi/...>` headers and export with `TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn)`;
the entry point's SYMBOL is that exported name. torch tensors pass through DLPack, no copy.
Available only where `apache-tvm-ffi` is installed (it is not a kloop dependency); elsewhere the
build fails with UnsupportedBinding naming the package.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.builder.result import BuildError, UnsupportedBinding
from kloop.builder.sources import shorten
from kloop.device.tools import python_package_version

PACKAGE = "apache-tvm-ffi"

# language -> (tvm-ffi backend, cxx flags, device flags, link flags); data so the cache key includes it
BACKENDS: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "cpp": (None, ("-O3", "-fopenmp"), (), ("-fopenmp",)),
    "cuda": ("cuda", ("-O3",), ("-O3", "-lineinfo"), ()),
    "hip": ("hip", ("-O3",), ("-O3",), ()),
}


def available() -> bool:
    """True when the tvm_ffi package can be imported here."""
    return importlib.util.find_spec("tvm_ffi") is not None


def require() -> None:
    """UnsupportedBinding unless apache-tvm-ffi is installed."""
    if not available():
        raise UnsupportedBinding(f"binding 'tvm-ffi' is not supported here: the {PACKAGE} package is not installed "
                                 f"(pip install {PACKAGE}), or use binding 'torch'")


def fingerprint() -> dict[str, str]:
    """The tvm-ffi version (its headers and ABI enter the cache key)."""
    return {"tvm_ffi": python_package_version("tvm-ffi") or "-"}


def compile_module(language: str, sources: list[Path], include_dir: Path, build_dir: Path, module_name: str,
                   flags: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]) -> str:
    """Build the shared object with (cxx, device, link) `flags`; returns its path.

    The flags come from `extension.build_flags` (this table plus dependency link flags), the same
    tuple the cache key hashes. Raises whatever the compiler step raises.
    """
    import tvm_ffi.cpp

    backend = BACKENDS[language][0]
    cxx, device, link = flags
    cpp_files = [str(p) for p in sources if p.suffix in (".cpp", ".cc", ".cxx", ".c")]
    cuda_files = [str(p) for p in sources if p.suffix in (".cu", ".hip")]
    return tvm_ffi.cpp.build(module_name, cpp_files=cpp_files, cuda_files=cuda_files, extra_cflags=list(cxx),
                             extra_cuda_cflags=list(device), extra_ldflags=list(link),
                             extra_include_paths=[str(include_dir)], build_directory=str(build_dir), backend=backend)


def load_function(so_path: Path, symbol: str) -> Callable[..., Any]:
    """The exported function `symbol` of a built module."""
    import tvm_ffi

    try:
        module = tvm_ffi.load_module(str(so_path))
    except Exception as exc:  # tvm-ffi raises its own error types for bad shared objects
        raise BuildError(shorten(f"loading the tvm-ffi module failed: {exc}")) from None
    try:
        return module[symbol]
    except (AttributeError, KeyError, RuntimeError):
        raise BuildError(f"the module exports no {symbol!r}; export it with "
                         f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({symbol}, {symbol})") from None


def include_flags() -> list[str]:
    """-I flags for compile-only checks of tvm-ffi sources."""
    from tvm_ffi import libinfo

    return [f"-I{path}" for path in dict.fromkeys([libinfo.find_include_path(), libinfo.find_dlpack_include_path()])]
