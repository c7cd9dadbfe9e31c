"""python and triton: import the entry module from the cache entry under a unique name.

Each build gets a fresh synthetic package (`_kloop_solution_<key>_<n>`) whose path is the
entry's private source copy, so relative imports work and two candidates never share modules.
Sibling modules imported absolutely (`import helpers`) are dropped from sys.modules after the
import, so the next candidate's `helpers` is its own. Triton on a CPU runs in the interpreter
(TRITON_INTERPRET=1, set before triton is imported: the sandbox is a fresh process).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.builder.result import BuildError, ToolchainMissing
from kloop.builder.sources import entry_parts, shorten, write_sources
from kloop.device.schema import DeviceKind
from kloop.device.tools import python_package_version

_COUNTER = itertools.count()


def _import_failure(exc: BaseException, src_dir: Path) -> BuildError:
    """A BuildError naming the exception and the candidate's own frame (file:line)."""
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{Path(exc.filename).name}:{exc.lineno}: "
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(str(src_dir))]
        if frames:
            where = f"{Path(frames[-1].filename).relative_to(src_dir)}:{frames[-1].lineno}: "
    return BuildError(shorten(f"importing the solution failed: {where}{type(exc).__name__}: {exc}"))


def import_entry(src_dir: Path, entry_file: str, symbol: str, key: str) -> Callable[..., Any]:
    """Import `entry_file` from `src_dir` as a fresh package module and return `symbol`."""
    if not entry_file.endswith(".py"):
        raise BuildError(f"entry file {entry_file!r} is not a .py file")
    package = f"_kloop_solution_{key[:12]}_{next(_COUNTER)}"
    pkg = types.ModuleType(package)
    pkg.__path__ = [str(src_dir)]
    pkg.__file__ = None
    sys.modules[package] = pkg
    module_name = package + "." + entry_file[:-3].replace("/", ".")
    before = set(sys.modules)
    sys.path.insert(0, str(src_dir))
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # any failure while importing candidate code is the candidate's
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _import_failure(exc, src_dir) from None
    finally:
        with contextlib.suppress(ValueError):  # the candidate may have edited sys.path itself
            sys.path.remove(str(src_dir))
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if not name.startswith(package) and origin.startswith(str(src_dir)):
                del sys.modules[name]
    fn = getattr(module, symbol, None)
    if fn is None or not callable(fn):
        raise BuildError(f"{entry_file} defines no callable {symbol!r}")
    return fn


class PythonBuilder:
    """Plain Python (torch) solutions."""

    languages: tuple[str, ...] = ("python",)

    def fingerprint(self, solution: Any, kind: DeviceKind, arch: str) -> dict[str, str]:
        return {"python": sys.version.split()[0], "torch": python_package_version("torch") or "-"}

    def compile(self, solution: Any, entry_dir: Path, kind: DeviceKind, arch: str, module_name: str) -> dict[str, Any]:
        write_sources(solution, entry_dir / "src")
        return {"language": self.languages[0], "src": "src"}

    def load(self, solution: Any, entry_dir: Path, manifest: dict[str, Any], kind: DeviceKind) -> Callable[..., Any]:
        entry_file, symbol = entry_parts(solution)
        return import_entry(entry_dir / manifest["src"], entry_file, symbol, manifest["key"])

    def timing_meaningful(self, kind: DeviceKind) -> bool:
        return True


class TritonBuilder(PythonBuilder):
    """Triton kernels; on a CPU they run in Triton's interpreter, correct but not timed."""

    languages: tuple[str, ...] = ("triton",)

    def fingerprint(self, solution: Any, kind: DeviceKind, arch: str) -> dict[str, str]:
        interpret = "1" if kind is DeviceKind.CPU else os.environ.get("TRITON_INTERPRET", "0")
        return {**super().fingerprint(solution, kind, arch), "triton": python_package_version("triton") or "-",
                "interpret": interpret}

    def load(self, solution: Any, entry_dir: Path, manifest: dict[str, Any], kind: DeviceKind) -> Callable[..., Any]:
        if python_package_version("triton") is None:
            raise ToolchainMissing("triton is not installed here; triton solutions need `pip install triton`")
        if kind is DeviceKind.CPU:
            os.environ["TRITON_INTERPRET"] = "1"
        return super().load(solution, entry_dir, manifest, kind)

    def timing_meaningful(self, kind: DeviceKind) -> bool:
        return kind is not DeviceKind.CPU
