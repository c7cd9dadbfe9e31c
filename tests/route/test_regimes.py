"""Regimes: log-4 buckets of the routing axis, split at measured crossovers, merged by winner."""

from __future__ import annotations

import pytest

from kloop.errors import BadInput
from kloop.route.regimes import OPEN, find_regime, log_buckets, routing_axis, split_and_merge

SHAPES = {"a": {"n": 1}, "b": {"n": 6}, "c": {"n": 40}, "d": {"n": 60}, "e": {"n": 300}}


def test_log_buckets_cover_every_value_once() -> None:
    regimes = log_buckets(SHAPES)
    assert [r.name for r in regimes] == ["n:0-3", "n:4-15", "n:16-255", "n:256-inf"]
    assert [r.workloads for r in regimes] == [["a"], ["b"], ["c", "d"], ["e"]]
    for value in (0, 1, 5, 17, 255, 256, 10**9):
        assert sum(r.contains(value) for r in regimes) == 1


def test_routing_axis_is_the_var_axis_with_most_values() -> None:
    assert routing_axis({"a": {"n": 1, "m": 4}, "b": {"n": 2, "m": 4}}) == "n"
    assert routing_axis({}) is None


def test_a_bucket_is_split_at_the_crossover_and_neighbours_with_one_winner_merge() -> None:
    winners = {"a": "short", "b": "short", "c": "short", "d": "long", "e": "long"}
    regimes = split_and_merge(log_buckets(SHAPES), SHAPES, winners)
    assert [(r.lo, r.hi, r.winner) for r in regimes] == [(0, 49, "short"), (49, OPEN, "long")]
    assert regimes[0].workloads == ["a", "b", "c"] and regimes[1].workloads == ["d", "e"]


def test_unknown_regime_names_the_known_ones() -> None:
    with pytest.raises(BadInput, match="known: n:0-3, n:4-15"):
        find_regime(log_buckets(SHAPES), "n:7-8")
