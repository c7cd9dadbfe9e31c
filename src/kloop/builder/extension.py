"""cpp, cuda and hip through PyTorch's C++ extension mechanism (binding `torch`) or tvm-ffi.

Convention: sources include <torch/extension.h> and export the entry symbol with
`PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }`; `entry_point` is
`kernel.cpp::run`. The ninja build directory lives inside the cache entry; a warm entry is loaded
by importing its shared object directly, with no compiler and no ninja involved.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kloop.builder import tvm_ffi_binding
from kloop.builder.result import BuildError, ToolchainMissing, UnsupportedBinding
from kloop.builder.sources import entry_parts, shorten, write_sources
from kloop.device.schema import DeviceKind
from kloop.device.tools import python_package_version, version_text, which

SOURCE_SUFFIXES: dict[str, tuple[str, ...]] = {
    "cpp": (".cpp", ".cc", ".cxx", ".c"),
    "cuda": (".cu", ".cpp", ".cc", ".cxx", ".c"),
    "hip": (".hip", ".cu", ".cpp", ".cc", ".cxx", ".c"),
}

# language -> (host flags, device flags, link flags); data so the cache key can include it
FLAGS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "cpp": (("-O3", "-fopenmp"), (), ("-fopenmp",)),
    "cuda": (("-O3",), ("-O3", "-lineinfo"), ()),
    "hip": (("-O3",), ("-O3",), ()),
}

# declared dependency -> link flags; names not listed add nothing (header-only or unknown)
DEPENDENCY_LDFLAGS: dict[str, tuple[str, ...]] = {
    "cublas": ("-lcublas", "-lcublasLt"),
    "cublaslt": ("-lcublasLt",),
    "cudnn": ("-lcudnn",),
    "curand": ("-lcurand",),
    "hipblas": ("-lhipblas",),
    "hipblaslt": ("-lhipblaslt",),
    "rocblas": ("-lrocblas",),
}

COMPILER_OF = {"cpp": "gcc", "cuda": "nvcc", "hip": "hipcc"}

# (binding, language) -> the environment variable that carries the target architecture
ARCH_VARIABLE: dict[tuple[str, str], str] = {
    ("torch", "cuda"): "TORCH_CUDA_ARCH_LIST",
    ("torch", "hip"): "PYTORCH_ROCM_ARCH",
    ("tvm-ffi", "cuda"): "TVM_FFI_CUDA_ARCH_LIST",
    ("tvm-ffi", "hip"): "TVM_FFI_ROCM_ARCH_LIST",
}
BINDINGS = ("torch", "tvm-ffi")

_ERROR_LINE = re.compile(r"(error|Error|undefined reference|undefined symbol|fatal)")


def binding_of(solution: Any) -> str:
    """The binding to build with: declared, else tvm-ffi when sources include its headers, else torch."""
    declared = getattr(solution.spec.binding, "value", solution.spec.binding)
    if declared:
        return str(declared)
    uses_tvm_ffi = any("#include <tvm/ffi/" in src.content or '#include "tvm/ffi/' in src.content
                       for src in solution.sources)
    return "tvm-ffi" if uses_tvm_ffi else "torch"


def build_flags(solution: Any) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(host, device, link) flags exactly as the build passes them, for the binding it resolves to.

    One table per binding (`FLAGS` here, `tvm_ffi_binding.BACKENDS`), plus the link flags of the
    declared dependencies on both paths. The cache key hashes this same tuple.
    """
    language = str(getattr(solution.spec.language, "value", solution.spec.language))
    deps = tuple(flag for dep in solution.spec.dependencies for flag in DEPENDENCY_LDFLAGS.get(dep.lower(), ()))
    if binding_of(solution) == "tvm-ffi":
        _, host, device, link = tvm_ffi_binding.BACKENDS[language]
    else:
        host, device, link = FLAGS[language]
    return host, device, (*link, *deps)


def compile_error_summary(output: str, staging: Path, *, max_lines: int = 12) -> str:
    """The compiler's first error lines (with a little context), paths made relative to the solution."""
    text = output.replace(str(staging / "src") + "/", "").replace(str(staging) + "/", "")
    lines = text.splitlines()
    picked: list[str] = []
    for index, line in enumerate(lines):
        if _ERROR_LINE.search(line) and not line.lstrip().startswith(("FAILED:", "ninja:", "[")):
            picked.extend(lines[index:index + 3])
        if len(picked) >= max_lines:
            break
    return shorten("\n".join(picked or lines[-max_lines:]), max_lines=max_lines)


def arch_list_value(language: str, arch: str) -> str:
    """The arch variable's value: CUDA's `9.0a` spelling for `sm_90a`; a gfx name as is."""
    return cuda_arch_list(arch) if language == "cuda" else arch


def cuda_arch_list(arch: str) -> str:
    """`sm_90` -> `9.0`, `sm_90a` -> `9.0a`, `sm_100` -> `10.0` (TORCH_CUDA_ARCH_LIST spelling)."""
    match = re.fullmatch(r"sm_(\d+)(\d)([a-z]?)", arch)
    if not match:
        raise BuildError(f"cannot turn device arch {arch!r} into a CUDA architecture")
    return f"{match.group(1)}.{match.group(2)}{match.group(3)}"


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of a build."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def import_extension(module_name: str, so_path: Path) -> Any:
    """Import a built extension's shared object (torch first: it links against libtorch)."""
    import torch  # noqa: F401  (loads libtorch's symbols before the extension needs them)

    if module_name in sys.modules:
        return sys.modules[module_name]
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(so_path))
    spec = importlib.util.spec_from_file_location(module_name, so_path, loader=loader)
    if spec is None:
        raise BuildError(f"cannot load built extension {so_path.name}")
    module = importlib.util.module_from_spec(spec)
    try:
        loader.exec_module(module)
    except ImportError as exc:
        raise BuildError(shorten(f"loading the built extension failed: {exc}")) from None
    sys.modules[module_name] = module
    return module


def import_hook_available() -> bool:
    """Whether this torch's `cpp_extension` has the private import step `_no_import_during_build` stubs."""
    import torch.utils.cpp_extension as cpp_extension

    return callable(getattr(cpp_extension, "_import_module_from_library", None))


@contextlib.contextmanager
def _no_import_during_build() -> Iterator[None]:
    """Keep `cpp_extension.load` from importing what it built: compile only, no candidate code.

    The built files are hashed right after the compile and before `load` imports them, so the
    hashes describe what the compiler produced, not what a static initializer left behind. On a
    torch without the private hook nothing is patched and the manifest says `imported_at_build`.
    """
    import torch.utils.cpp_extension as cpp_extension

    original = getattr(cpp_extension, "_import_module_from_library", None)
    if not import_hook_available():
        yield
        return
    cpp_extension._import_module_from_library = lambda *args, **kwargs: None
    try:
        yield
    finally:
        cpp_extension._import_module_from_library = original


class TorchExtensionBuilder:
    """C++ on the CPU (gcc), CUDA (nvcc) and HIP (hipcc) through torch.utils.cpp_extension."""

    languages: tuple[str, ...] = ("cpp", "cuda", "hip")

    def fingerprint(self, solution: Any, kind: DeviceKind, arch: str) -> dict[str, str]:
        language = str(getattr(solution.spec.language, "value", solution.spec.language))
        compiler = COMPILER_OF[language]
        host, device, link = build_flags(solution)
        binding = binding_of(solution)
        extra = tvm_ffi_binding.fingerprint() if binding == "tvm-ffi" else {}
        return {"python": sys.version.split()[0], "torch": python_package_version("torch") or "-",
                "binding": binding, "gcc": version_text("gcc") or "-", **extra,
                compiler: version_text(compiler) or "-", "flags": " ".join((*host, "|", *device, "|", *link))}

    def _check_toolchain(self, language: str, binding: str) -> None:
        """Refuse what this machine cannot build, with the reason in one line."""
        import torch

        if binding not in BINDINGS:
            raise UnsupportedBinding(f"binding {binding!r} is not supported; use 'torch' or 'tvm-ffi'")
        if binding == "tvm-ffi":
            tvm_ffi_binding.require()
        for tool in ("ninja", "gcc") if binding == "torch" else ("gcc",):
            if which(tool) is None:
                raise ToolchainMissing(f"{tool} not found: {language} solutions build with {tool} on PATH")
        if language == "hip":
            if which("hipcc") is None:
                raise ToolchainMissing("hipcc not found: hip solutions build on a ROCm machine with hipcc on PATH "
                                       "(or under $ROCM_PATH/bin)")
            if not getattr(torch.version, "hip", None):
                raise BuildError("this torch is not a ROCm build; hip solutions need torch for ROCm")
        if language == "cuda" and not torch.version.cuda:
            raise BuildError("this torch has no CUDA support; cuda solutions run on a CUDA machine "
                             "(use kloop.builder.check_compiles for a compile-only check)")

    def compile(self, solution: Any, entry_dir: Path, kind: DeviceKind, arch: str, module_name: str) -> dict[str, Any]:
        language = str(getattr(solution.spec.language, "value", solution.spec.language))
        self._check_toolchain(language, binding_of(solution))
        entry_file, _ = entry_parts(solution)
        suffixes = SOURCE_SUFFIXES[language]
        if not entry_file.endswith(suffixes):
            raise BuildError(f"entry file {entry_file!r} of a {language} solution must end in {', '.join(suffixes)}")
        written = write_sources(solution, entry_dir / "src")
        compiled = [path for path in written if path.suffix in suffixes]
        binding = binding_of(solution)
        variable = ARCH_VARIABLE.get((binding, language))
        env = {variable: arch_list_value(language, arch)} if variable and arch.startswith(("sm_", "gfx")) else {}
        build_dir = entry_dir / "build"
        build_dir.mkdir()
        try:
            with _environ(**env):
                if binding == "tvm-ffi":
                    so_path = tvm_ffi_binding.compile_module(language, compiled, entry_dir / "src", build_dir, module_name,
                                                             build_flags(solution))
                else:
                    so_path = self._torch_compile(solution, language, compiled, entry_dir, module_name)
        except (RuntimeError, OSError, ImportError, subprocess.CalledProcessError) as exc:
            output = "\n".join(str(part) for part in (exc, getattr(exc, "output", None), getattr(exc, "stderr", None))
                               if part)
            raise BuildError(f"{language} build failed:\n" + compile_error_summary(output, entry_dir)) from None
        return {"language": language, "binding": binding, "module": module_name,
                "shared_object": Path(so_path).relative_to(entry_dir).as_posix(),
                "imported_at_build": binding == "torch" and not import_hook_available()}

    def _torch_compile(self, solution: Any, language: str, compiled: list[Path], entry_dir: Path,
                       module_name: str) -> str:
        """torch.utils.cpp_extension.load into `entry_dir/build`; returns the shared object's path."""
        from torch.utils.cpp_extension import load

        host, device, link = build_flags(solution)
        with _no_import_during_build():
            load(name=module_name, sources=[str(p) for p in compiled], extra_cflags=list(host),
                 extra_cuda_cflags=list(device), extra_ldflags=list(link),
                 extra_include_paths=[str(entry_dir / "src")], build_directory=str(entry_dir / "build"),
                 with_cuda=language != "cpp", verbose=False)
        return str(entry_dir / "build" / f"{module_name}.so")

    def load(self, solution: Any, entry_dir: Path, manifest: dict[str, Any], kind: DeviceKind) -> Callable[..., Any]:
        _, symbol = entry_parts(solution)
        if manifest.get("binding") == "tvm-ffi":
            return tvm_ffi_binding.load_function(entry_dir / manifest["shared_object"], symbol)
        module = import_extension(manifest["module"], entry_dir / manifest["shared_object"])
        fn = getattr(module, symbol, None)
        if fn is None:
            raise BuildError(f"the extension exports no {symbol!r}; bind it with "
                             f'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("{symbol}", &{symbol}); }}')
        return fn

    def timing_meaningful(self, kind: DeviceKind) -> bool:
        return True
