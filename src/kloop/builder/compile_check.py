"""Compile-only checks: does a cuda / hip / cpp solution compile for a target, without running it?

For machines with a compiler but no GPU (nvcc here): each source is compiled to an object file
with the same include paths and defines the torch extension build uses, for the requested
architecture (`sm_90`, `gfx942`). Nothing is linked or imported, so no candidate code runs.
"""

from __future__ import annotations

import re
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.builder import tvm_ffi_binding
from kloop.builder.extension import SOURCE_SUFFIXES, binding_of, compile_error_summary
from kloop.builder.result import BuildError, ToolchainMissing, UnsupportedBinding
from kloop.builder.sources import write_sources
from kloop.device.tools import which
from kloop.task.tunables import render_tunables

COMPILE_TIMEOUT_S = 600


@dataclass(frozen=True)
class CompileCheck:
    """A passed compile-only check: what was compiled, for what, and how long it took."""

    language: str
    arch: str
    objects: list[str] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0


def _torch_flags(src_dir: Path) -> list[str]:
    """Include paths and defines of a torch extension build (torch/extension.h resolves)."""
    import torch
    from torch.utils.cpp_extension import include_paths

    flags = [f"-I{src_dir}", *(f"-I{path}" for path in include_paths()), f"-I{sysconfig.get_paths()['include']}"]
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [*flags, "-DTORCH_EXTENSION_NAME=kloop_compile_check", "-DTORCH_API_INCLUDE_EXTENSION_H",
            f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]


def _nvcc_command(source: Path, obj: Path, arch: str, common: list[str]) -> list[str]:
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

    match = re.fullmatch(r"sm_(\d+[a-z]?)", arch)
    if not match:
        raise BuildError(f"CUDA arch must look like sm_90 or sm_90a, got {arch!r}")
    nvcc = which("nvcc")
    if nvcc is None:
        raise ToolchainMissing("nvcc not found: install the CUDA toolkit or put nvcc on PATH")
    gencode = f"-gencode=arch=compute_{match.group(1)},code=sm_{match.group(1)}"
    return [nvcc, "-c", "-std=c++20", gencode, "-O3", "-Xcompiler", "-fPIC", *COMMON_NVCC_FLAGS, *common,
            str(source), "-o", str(obj)]


def _hipcc_command(source: Path, obj: Path, arch: str, common: list[str]) -> list[str]:
    hipcc = which("hipcc")
    if hipcc is None:
        raise ToolchainMissing("hipcc not found: hip solutions compile on a machine with ROCm's hipcc on PATH")
    if not arch.startswith("gfx"):
        raise BuildError(f"HIP arch must look like gfx942, got {arch!r}")
    return [hipcc, "-c", "-std=c++20", f"--offload-arch={arch}", "-O3", "-fPIC", "-D__HIP_PLATFORM_AMD__=1",
            "-DUSE_ROCM=1", *common, "-x", "hip", str(source), "-o", str(obj)]


def _host_command(source: Path, obj: Path, arch: str, common: list[str]) -> list[str]:
    gxx = which("g++") or which("gcc") or "g++"
    return [gxx, "-c", "-std=c++20", "-O3", "-fPIC", "-fopenmp", *common, str(source), "-o", str(obj)]


def _command_for(language: str, source: Path) -> Any:
    """Device sources go through the language's compiler, host sources through g++."""
    device_suffixes = {"cuda": (".cu",), "hip": (".hip", ".cu")}.get(language, ())
    if source.suffix in device_suffixes:
        return _nvcc_command if language == "cuda" else _hipcc_command
    return _host_command


def check_compiles(solution: Any, arch: str = "sm_90", *, work_dir: Path | None = None) -> CompileCheck:
    """Compile every source of a cuda / hip / cpp solution for `arch`; BuildError with the first errors.

    Include paths follow the binding: torch's headers (`torch`) or tvm-ffi's (`tvm-ffi`).
    """
    solution = render_tunables(solution)  # a solution declaring tunables builds as its defaults
    language = str(getattr(solution.spec.language, "value", solution.spec.language))
    if language not in SOURCE_SUFFIXES:
        raise BuildError(f"check_compiles handles cpp, cuda and hip, not {language!r}")
    binding = binding_of(solution)
    if binding not in ("torch", "tvm-ffi"):
        raise UnsupportedBinding(f"binding {binding!r} is not supported; use 'torch' or 'tvm-ffi'")
    if binding == "tvm-ffi":
        tvm_ffi_binding.require()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kloop-compile-", dir=work_dir) as tmp:
        root = Path(tmp)
        written = write_sources(solution, root / "src")
        common = ([f"-I{root / 'src'}", *tvm_ffi_binding.include_flags()] if binding == "tvm-ffi"
                  else _torch_flags(root / "src"))
        check = CompileCheck(language=language, arch=arch)
        for source in (p for p in written if p.suffix in SOURCE_SUFFIXES[language]):
            obj = root / "obj" / (source.relative_to(root / "src").as_posix().replace("/", "__") + ".o")
            obj.parent.mkdir(exist_ok=True)
            command = _command_for(language, source)(source, obj, arch, common)
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                raise BuildError(f"compiling {source.name} took over {COMPILE_TIMEOUT_S} s") from None
            if done.returncode != 0:
                output = (done.stderr or "") + (done.stdout or "")
                raise BuildError(f"{language} compile for {arch} failed:\n" + compile_error_summary(output, root))
            check.objects.append(source.relative_to(root / "src").as_posix())
            check.commands.append(command)
    return CompileCheck(language=language, arch=arch, objects=check.objects, commands=check.commands,
                        seconds=round(time.perf_counter() - began, 3))
