"""Timing on the supervisor's terms: A-B interleaved batches, wall-clock agreement, re-checked outputs.

For every listed workload that passed correctness, candidate and baseline sandboxes run timing
batches in turn (A-B, then B-A, ...). Every timed iteration gets fresh inputs (see
`stats.fresh_inputs`); afterwards the supervisor picks, with its own secret randomness, which
timed iterations' outputs to fetch and re-check against the reference. It also times each batch
itself: a sandbox whose reported times disagree with the supervisor's clock is rejected, and
latencies below the device's physics floor are rejected.
"""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kloop.task.schema import Workload
from kloop.verify.process import SandboxProcess
from kloop.verify.result import Summary, VerifyStatus, WorkloadResult
from kloop.verify.sandbox import MAX_KEPT_BYTES
from kloop.verify.stats import fresh_inputs, iteration_seeds, median_ci_ms, median_ms, speedup_with_ci
from kloop.verify.workload import POISONS, WorkloadJudge

if TYPE_CHECKING:
    from kloop.verify.supervisor import Verification

TARGET_BATCH_S = 0.1  # batches last about this long: enough work for the wall clock to see
MAX_ITERATIONS = 1000
RECHECK_BYTES = 4 << 20  # small outputs are cheap to re-check: re-check up to this many bytes of them
RECHECK_MAX = 64  # ... but never more than this many iterations per workload
CONFIRMATIONS = 2  # extra batch pairs before a wall-clock disagreement counts
WALL_SLACK_NS = 5_000_000  # fixed slack of the lower wall-clock bound (scheduler noise)
# per-iteration slack: CPU timers see the whole call; CUDA events miss the host-side launch cost
WALL_SLACK_PER_ITER_NS = {"cpu": 2_000, "cuda": 30_000}


@dataclass
class Batch:
    """One timing batch as the supervisor saw it."""

    batch_id: int
    seed: int
    warmup: int
    times_ns: list[int]
    wall_ns: int


@dataclass
class Samples:
    """Timing samples of one workload."""

    candidate: list[int] = field(default_factory=list)
    baseline: list[int] = field(default_factory=list)


class TimingSession:
    """Times the listed workloads; records timed_outputs, wall_clock and physics_floor in `book`."""

    def __init__(self, judge: WorkloadJudge, book: CheckBook, boxes: dict[str, SandboxProcess], plan: TimingPlan,
                 overhead: dict[str, dict[str, Overhead]]) -> None:  # fmt: skip
        self.judge, self.book, self.plan, self.overhead = judge, book, plan, overhead
        self.boxes = dict(boxes)
        self.clock = clock_kind(list(self.boxes.values()), plan.device)
        self.outcome = TimingOutcome(rounds=plan.rounds, clock=self.clock)
        self.per_workload: dict[str, dict[str, LogRatio]] = {}
        self.rng = secrets.SystemRandom()
        self.failed: set[str] = set()
        self.per_call_ns = 1_000

    def run(self, listed: list[Workload], results: list[WorkloadResult]) -> TimingOutcome:
        others = [label for label in self.boxes if label != CANDIDATE]
        for workload in listed:
            result = next((r for r in results if r.uuid == workload.uuid and not r.heldout), None)
            if result is None or result.status is not VerifyStatus.PASSED:
                continue
            from kloop.progress import step

            step(f"timing workload {workload.uuid[:8]} {result.axes}")
            try:
                self._time_workload(workload, result)
            except _Stop:
                result.status = self.book.status()
                break
            if not self.book.ok("timed_outputs") or not self.book.ok("wall_clock"):
                break
        timed = [r for r in results if r.uuid in self.per_workload]
        for label in others:
            parts = [self.per_workload[r.uuid][label] for r in timed if label in self.per_workload[r.uuid]]
            if timed and len(parts) == len(timed) and label not in self.failed:
                self.outcome.vs[label] = geomean(parts)
        if not others:
            self.outcome.note = "no baseline timed; no speedup"
        return self.outcome

    # -- one workload ------------------------------------------------------------------------------
    def _time_workload(self, workload: Workload, result: WorkloadResult) -> None:
        inputs, axes = self.judge.inputs_for(workload)
        where = self.judge.label(workload, axes)
        count = batch_size(self.judge, self.plan, workload.uuid, axes, inputs)
        self.per_call_ns = self.judge.call_ns.get(workload.uuid, 1_000)
        overhead = self.overhead.get(workload.uuid, {}).get(self.clock, Overhead(0.0, 0.0))
        timing = WorkloadTiming(rounds_ns={label: [] for label in self.boxes})
        if self.plan.warmup:
            warm = fresh_calls(self.judge, workload, "warmup", self.plan.warmup)
            for label in self._order():
                self._batch(label, axes, warm, where)
        picks_left = recheck_count(self.plan.recheck, sum(_nbytes(s) for s in self.judge.output_specs(axes)))
        for r in range(self.plan.rounds):
            calls = fresh_calls(self.judge, workload, f"round{r}", count)
            raw: dict[str, int] = {}
            for label in self._order(with_noop="baseline" in self.boxes):
                if label == NOOP:  # this round's harness cost, in the trusted box, under this moment's load
                    took = send_batch(self.boxes["baseline"], self.judge, axes, calls, self.plan.timeout_s, noop=True,
                                      per_call_ns=self.per_call_ns)[0]  # fmt: skip
                    raw[NOOP] = took[self.clock]
                    continue
                took, reply, outs = self._batch(label, axes, calls, where)
                raw[label] = took[self.clock]
                if label == CANDIDATE:
                    self._cross_check(sum(reply["times_ns"]), took["wall"], where)
                    want = math.ceil(picks_left / (self.plan.rounds - r))
                    picks_left -= want
                    self._recheck(calls, outs, reply, axes, where, want, r)
            cost = raw.pop(NOOP, None)
            cost = overhead.of(count) if cost is None else cost
            for label, ns in raw.items():
                timing.rounds_ns[label].append(batch_latency_ns(ns, cost, count))
        self._record(workload, result, timing, axes, where, count)

    def _order(self, with_noop: bool = False) -> list[str]:
        """This round's order, drawn with the supervisor's secret randomness."""
        order = list(self.boxes) + ([NOOP] if with_noop else [])
        self.rng.shuffle(order)
        return order

    def _batch(self, label: str, axes: dict[str, int], calls: list[dict[str, Any]],
               where: str) -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:  # fmt: skip
        box = self.boxes[label]
        took, reply, outs = send_batch(box, self.judge, axes, calls, self.plan.timeout_s, per_call_ns=self.per_call_ns)
        at = f"{where}: {label} timing batch"
        if label != CANDIDATE and not reply.get("ok"):  # not the candidate's fault, but no comparison with it
            self.failed.add(label)
            self.outcome.note = f"{at} failed: {str(reply.get('error'))[:300]}; no speedup over the {label}"
            raise _Stop
        if not reply.get("ok"):
            self.book.failed("runtime", f"{at}: {str(reply.get('error'))[:500]}")
            raise _Stop
        times = reply.get("times_ns")
        if not isinstance(times, list) or len(times) != len(calls) or not all(isinstance(t, int) and t >= 0 for t in times):
            self.book.failed("protocol", f"{at}: malformed timing reply")
            raise _Stop
        if label == CANDIDATE:
            statuses: list[VerifyStatus] = []
            self.judge.check_sandbox(reply, at, statuses)
            if statuses:
                raise _Stop
        return took, reply, outs

    def _recheck(self, calls: list[dict[str, Any]], outs: dict[str, Any], reply: dict[str, Any], axes: dict[str, int],
                 where: str, want: int, round_index: int) -> None:  # fmt: skip
        """Every call's outputs came back stacked; compare those of calls picked now against the reference."""
        import torch

        specs = self.judge.output_specs(axes)
        for j, spec in enumerate(specs):
            slab = outs.get(f"out{j}")
            if type(slab) is not torch.Tensor or list(slab.shape) != [len(calls), *spec["shape"]] \
                    or str(slab.dtype).removeprefix("torch.") != spec["dtype"]:  # fmt: skip
                self.book.failed("timed_outputs", f"{where}: timing round {round_index}: output {spec['name']} "
                                                  "did not come back for every call")  # fmt: skip
                raise _Stop
        bad = reply.get("bad")
        if bad:
            self.book.failed("timed_outputs", f"{where}: timing round {round_index}: calls {list(bad)[:3]} returned "
                                              "outputs of the wrong type, shape or dtype")  # fmt: skip
            raise _Stop
        for i in self.rng.sample(range(len(calls)), min(want, len(calls))):
            ref = self.judge.reference_outputs(calls[i], axes, where)
            ok, detail = self.judge.compare_outputs([outs[f"out{j}"][i] for j in range(len(specs))], ref)
            if not ok:
                self.book.failed("timed_outputs", f"{where}: call {i} of timing round {round_index}: {detail}")
                raise _Stop

    def _cross_check(self, claimed_ns: int, wall_ns: int, where: str) -> None:
        """The sandbox's own times are not the decisive clock; more time than its window held is a lie."""
        if claimed_ns > wall_ns + 1_000_000:
            self.book.failed("wall_clock", f"{where}: sandbox reports {claimed_ns / 1e6:.2f} ms in a batch that took "
                                           f"{wall_ns / 1e6:.2f} ms")  # fmt: skip
            raise _Stop
        self.book.passed("wall_clock", f"latency on the supervisor's side ({self.clock}); the sandbox's own times fit")

    def _record(self, workload: Workload, result: WorkloadResult, timing: WorkloadTiming, axes: dict[str, int],
                where: str, count: int) -> None:  # fmt: skip
        mine = timing.rounds_ns[CANDIDATE]
        result.latency_ms, result.latency_ci_ms = latency_ci_ms(mine)
        ratios: dict[str, LogRatio] = {}
        for label, theirs in timing.rounds_ns.items():
            if label != CANDIDATE:
                ratios[label] = paired(theirs, mine)
        if "baseline" in ratios:
            result.baseline_latency_ms = latency_ci_ms(timing.rounds_ns["baseline"])[0]
            result.speedup, result.speedup_ci = ratios["baseline"].speedup, ratios["baseline"].ci()
        if "incumbent" in ratios:
            result.incumbent_speedup, result.incumbent_speedup_ci = ratios["incumbent"].speedup, ratios["incumbent"].ci()
        self.per_workload[workload.uuid] = ratios
        self.book.passed("timed_outputs", f"{len(mine) * count} timed calls, each on its own fresh inputs; "
                                          "calls picked afterwards re-checked")
        self._check_physics(result, axes, where)
        result.status = VerifyStatus.PASSED if self.book.ok("timed_outputs") else VerifyStatus.REJECTED

    def _check_physics(self, result: WorkloadResult, axes: dict[str, int], where: str) -> None:
        floor_ms, why = physics_floor_ms(self.judge.definition, axes, self.plan.device)
        if floor_ms is None:
            self.book.skip("physics_floor", why)
            return
        assert result.latency_ms is not None
        if result.latency_ms < floor_ms:
            self.book.failed("physics_floor", f"{where}: {result.latency_ms:.4g} ms is below the floor {floor_ms:.4g} ms ({why})")
        else:
            self.book.passed("physics_floor", f"floor {floor_ms:.3g} ms ({why})")

    def _speedups(self) -> None:
        timed = [r for r in self.v.results if r.uuid in self.samples and self.samples[r.uuid].baseline]
        if not timed or self.baseline is None:
            return
        base = [self.samples[r.uuid].baseline for r in timed]
        cand = [self.samples[r.uuid].candidate for r in timed]
        per, per_ci, geo, geo_ci = speedup_with_ci(base, cand)
        for r, s, ci in zip(timed, per, per_ci, strict=True):
            r.speedup, r.speedup_ci = s, ci
        self.v.geomean = (geo, geo_ci)


class _Stop(Exception):
    """A batch failed; the failure is already in the CheckBook."""


def _nbytes(spec: dict[str, Any]) -> int:
    import torch

    n = 1
    for d in spec["shape"]:
        n *= int(d)
    return n * torch.empty((), dtype=getattr(torch, spec["dtype"])).element_size()


def physics_floor_ms(definition: Any, axes: dict[str, int], device: str) -> tuple[float | None, str]:
    """max(min bytes / peak bandwidth, FLOPs / peak rate) in ms, from kloop.device's numbers."""
    from kloop.task.shapes import flops_for, min_bytes_for

    try:
        from kloop.device import detect

        info = detect(device)
    except Exception as exc:  # device layer absent or failing: the floor cannot be applied
        return None, f"no device peak numbers ({type(exc).__name__}: {exc})"
    nbytes = min_bytes_for(definition, axes)
    bw_ms = nbytes / (info.peak_bandwidth_gbs * 1e9) * 1e3
    flops = flops_for(definition, axes)
    fl_ms = 0.0
    if flops:
        dtype = next(iter(definition.outputs.values())).dtype.value
        fl_ms = flops / info.peak_flops_for(dtype) * 1e3
    return max(bw_ms, fl_ms), f"{nbytes} B at {info.peak_bandwidth_gbs:.0f} GB/s" + (f", {flops:.3g} FLOP" if flops else "")


def summarize(results: list[WorkloadResult], note: str | None, geomean: tuple[float, list[float]] | None) -> Summary:
    timed = [r.latency_ms for r in results if r.latency_ms is not None]
    summary = Summary(latency_ms_median=statistics.median(timed) if timed else None, timing_note=note)
    if geomean is not None:
        summary.speedup_geomean, summary.speedup_ci = geomean
    return summary


def recheck_count(minimum: int, output_bytes: int) -> int:
    """How many timed iterations to re-check: many when outputs are small.

    An output cache keyed on addresses hits only when the allocator hands back a freed block,
    which on the CPU happens for small tensors (and on the GPU's caching allocator for all):
    a cache that is wrong on a quarter of the iterations escapes three samples 42 % of the time
    and 64 samples essentially never.
    """
    return max(minimum, min(RECHECK_MAX, RECHECK_BYTES // max(output_bytes, 1)))
