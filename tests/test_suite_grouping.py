"""The suite's xdist groups reach xdist's scheduler (scripts/test.sh runs `--dist loadgroup`)."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_an_xdist_group_reaches_the_scheduler(request: pytest.FixtureRequest) -> None:
    """With pytest 9.2 xdist's group suffix never reached the test's id, so grouped tests were spread
    over the workers: each started its own Ray cluster and compiled the C++ fixture again (~40 s)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by an xdist worker with --dist loadgroup")
    assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid
