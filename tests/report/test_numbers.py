"""Issue 26 item 2: the report's numbers agree with each other and name their one interval method."""

from __future__ import annotations

import re
from pathlib import Path

from kloop.report.data import Round, RunData
from kloop.report.html import _route, _workloads


def _data(tmp_path: Path) -> RunData:
    listed = {"uuid": "d7937328-aaaa-bbbb-cccc", "axes": {"tokens": 17}, "heldout": False, "status": "PASSED",
              "latency_ms": 0.1757, "latency_ci_ms": [0.17, 0.18], "baseline_latency_ms": 0.1757 * 2.81,
              "speedup": 2.81, "speedup_ci": [2.6, 3.0]}
    tiny = {"uuid": "tiny-1", "axes": {"tokens": 1}, "heldout": False, "status": "PASSED", "harness_bound": True,
            "harness_ms": 0.004, "latency_ms": 0.0137, "speedup": 1.2}
    regime = {"uuid": "heldout-coverage-shifted-d7937328", "axes": {"tokens": 17}, "heldout": True, "status": "PASSED"}
    row = {"round": 3, "stage": "iterate", "candidate": "r003", "speedup_geomean": 2.81, "speedup_lo": 2.6,
           "speedup_hi": 3.0, "accepted": True, "reasons": []}
    best = Round(row=row, verify={"workloads": [listed, tiny, regime]})
    route = {"admitted": True, "status": "PASSED", "speedup_geomean": 2.9, "speedup_ci": [2.7, 3.2],
             "best_speedup_geomean": 2.81, "reason": "", "plan": {"routes": [], "best": "r003"}}
    return RunData(run_dir=tmp_path, summary={"task": "t", "best": {"candidate": "r003"}}, rounds=[best], route=route)


def test_the_report_says_which_rows_are_what_and_one_interval_per_candidate(tmp_path: Path) -> None:
    """The footer's method name is checked on a real run in test_report.py."""
    data = _data(tmp_path)
    html = _workloads(data)
    assert "coverage regime &#x27;shifted&#x27; (untimed)" in html
    assert re.search(r"<td>0\.0137\d* [^<]*\(harness-bound\)</td>", html), html  # flagged, its latency still shown
    assert "best alone 2.81x [2.60, 3.00] in round 3, as in the rounds table" in _route(data)


def test_the_printed_latencies_and_speedup_agree(tmp_path: Path) -> None:
    html = _workloads(_data(tmp_path))
    row = re.search(r"tokens=17</td><td>d7937328[^<]*</td><td>PASSED</td><td>([\d.]+) [^<]*</td><td>([\d.]+)</td>"
                    r"<td>([\d.]+)x", html)  # fmt: skip
    assert row, html[html.find("id='workloads'") :][:800]
    latency, baseline, speedup = (float(v) for v in row.groups())
    assert abs(baseline / latency - speedup) < 0.01 * speedup
