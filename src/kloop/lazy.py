"""Package exports that load on first use (PEP 562), so `kloop --help` imports no schema it does not show.

A package lists `name -> defining module` and sets `__getattr__ = lazy_exports(__name__, EXPORTS)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports the module defining `name` when it is first asked for."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
