"""Suite-wide test settings: shared fixture paths and the gpu marker."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
EXAMPLES = REPO / "examples"


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu`-marked tests where no device is present; bench/device_check.sh runs them."""
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (run by bench/device_check.sh on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES
