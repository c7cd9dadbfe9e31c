"""Lazy package exports (kloop.lazy) must never share a name with a submodule of their package.

Importing `pkg.name` sets the package attribute `name` to the submodule, so a lazily exported
function of that name would turn into a module once anything imports the submodule.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kloop"
LAZY = sorted(p.parent.name for p in SRC.glob("*/__init__.py") if "lazy_exports(" in p.read_text())


def test_lazy_packages_are_found() -> None:
    assert {"device", "loop", "profile", "task", "verify", "wiki"} <= set(LAZY)


@pytest.mark.parametrize("name", LAZY)
def test_no_lazy_export_is_named_like_a_submodule(name: str) -> None:
    package = importlib.import_module(f"kloop.{name}")
    submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert not submodules & set(package._EXPORTS), f"kloop.{name}: {sorted(submodules & set(package._EXPORTS))}"


@pytest.mark.parametrize("name", LAZY)
def test_every_lazy_export_resolves_to_what_its_module_defines(name: str) -> None:
    package = importlib.import_module(f"kloop.{name}")
    for export, module in package._EXPORTS.items():
        assert getattr(package, export) is getattr(importlib.import_module(module), export), f"kloop.{name}.{export}"
