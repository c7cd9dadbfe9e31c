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
    """Times the listed workloads and records timed_outputs, wall_clock and physics_floor."""

    def __init__(self, verification: Verification, judge: WorkloadJudge, candidate: SandboxProcess,
                 baseline: SandboxProcess | None) -> None:  # fmt: skip
        self.v = verification
        self.judge = judge
        self.book = verification.book
        self.options = verification.options
        self.candidate = candidate
        self.baseline = baseline
        self.note: str | None = None if baseline is not None else "no baseline timed; no speedup"
        self.samples: dict[str, Samples] = {}
        self._next_batch = 0
        self._uuid = ""

    def run(self, listed: list[Workload]) -> None:
        for workload in listed:
            result = next((r for r in self.v.results if r.uuid == workload.uuid and not r.heldout), None)
            if result is None or result.status is not VerifyStatus.PASSED:
                continue
            from kloop.progress import step

            step(f"timing workload {workload.uuid[:8]} {result.axes}")
            self._time_workload(workload, result)
            if not self.book.ok("timed_outputs") or not self.book.ok("wall_clock"):
                break
        self._speedups()

    def _iterations(self, workload: Workload) -> int:
        """At least `options.iterations`; more for fast calls, so each batch holds real work."""
        per_call = max(self.judge.call_ns.get(workload.uuid, 0), 1_000)
        return max(self.options.iterations, min(MAX_ITERATIONS, int(TARGET_BATCH_S * 1e9 / per_call)))

    def _batch(self, box: SandboxProcess, count: int, warmup: int, noop: bool = False) -> Batch:
        batch_id, seed = self._next_batch, secrets.randbits(62)
        self._next_batch += 1
        header = {"batch": batch_id, "iterations": count, "warmup": warmup, "seed": seed, "poison": POISONS[0],
                  "noop": noop}  # fmt: skip
        start = time.perf_counter_ns()
        per_call_s = max(self.judge.call_ns.get(self._uuid, 0), 1_000) / 1e9
        reply, _ = box.request("time", header, timeout_s=self.options.timeout_s + 10 * per_call_s * (count + warmup))
        wall = time.perf_counter_ns() - start
        where = f"{box.label} timing batch"
        if not reply.get("ok"):
            self.book.failed("runtime", f"{where}: {str(reply.get('error'))[:500]}")
            raise _Stop
        times = reply.get("times_ns")
        if not isinstance(times, list) or len(times) != count or not all(isinstance(t, int) and t >= 0 for t in times):
            self.book.failed("protocol", f"{where}: malformed timing reply")
            raise _Stop
        statuses: list[VerifyStatus] = []
        self.judge.check_sandbox(reply, where, statuses)
        if statuses:
            raise _Stop
        return Batch(batch_id, seed, warmup, times, wall)

    def _time_workload(self, workload: Workload, result: WorkloadResult) -> None:
        self._uuid = workload.uuid
        inputs, axes = self.judge.inputs_for(workload)
        where = self.judge.label(workload, axes)
        boxes = [self.candidate] + ([self.baseline] if self.baseline is not None else [])
        for box in boxes:
            self.judge.stage(box, inputs, axes, self.options.timeout_s)
        count, warm = self._iterations(workload), self.options.warmup
        try:
            noop = [self._batch(self.candidate, count, 0, noop=True)]
            mine: list[Batch] = []
            theirs: list[Batch] = []
            for r in range(self.options.rounds):
                order = boxes if r % 2 == 0 else boxes[::-1]
                for box in order:
                    batch = self._batch(box, count, warm if r == 0 else 0)
                    (mine if box is self.candidate else theirs).append(batch)
            noop.append(self._batch(self.candidate, count, 0, noop=True))
        except _Stop:
            result.status = self.book.status()
            return
        self._check_wall_clock(mine, noop, where)
        self._recheck(mine, inputs, axes, where, kept_before=len(noop[0].times_ns))
        samples = Samples([t for b in mine for t in b.times_ns], [t for b in theirs for t in b.times_ns])
        self.samples[workload.uuid] = samples
        result.latency_ms = median_ms(samples.candidate)
        result.latency_ci_ms = median_ci_ms(samples.candidate)
        if samples.baseline:
            result.baseline_latency_ms = median_ms(samples.baseline)
        self._check_physics(result, axes, where)
        result.status = VerifyStatus.PASSED if self.book.ok("timed_outputs") else VerifyStatus.REJECTED

    def _check_wall_clock(self, mine: list[Batch], noop: list[Batch], where: str) -> None:
        """Reported times must fit inside the supervisor's wall time, and not be far below it.

        Scheduler noise only ever adds wall time, so the work estimate is the smallest over the
        batches (minus the largest harness-only batch) and the claim is the largest. A failing
        comparison is confirmed with more batch pairs before it counts: noise does not repeat,
        a lying clock does.
        """
        for b in mine:
            if sum(b.times_ns) > b.wall_ns + 1_000_000:
                self.book.failed("wall_clock", f"{where}: sandbox reports {sum(b.times_ns) / 1e6:.2f} ms in a batch "
                                               f"that took {b.wall_ns / 1e6:.2f} ms")  # fmt: skip
                return
        steady = [b for b in mine if not b.warmup]
        if not steady:
            self.book.skip("wall_clock", "needs at least two timing rounds")
            return
        count = len(steady[0].times_ns)
        for _ in range(CONFIRMATIONS):
            agrees, claimed, work = self._clock_agrees(steady, noop, count)
            if agrees:
                break
            steady.append(self._batch(self.candidate, count, 0))
            noop.append(self._batch(self.candidate, count, 0, noop=True))
        else:
            agrees, claimed, work = self._clock_agrees(steady, noop, count)
        if agrees:
            self.book.passed("wall_clock", f"reported times agree with the supervisor's clock ({count} calls per batch)")
        else:
            self.book.failed("wall_clock", f"{where}: sandbox reports {claimed / 1e6:.2f} ms for {count} calls, the "
                                           f"supervisor measured at least {work / 1e6:.2f} ms in {len(steady)} batches")  # fmt: skip

    def _clock_agrees(self, steady: list[Batch], noop: list[Batch], count: int) -> tuple[bool, int, int]:
        overhead = max(b.wall_ns for b in noop)
        work = min(b.wall_ns for b in steady) - overhead
        claimed = max(sum(b.times_ns) for b in steady)
        slack = WALL_SLACK_NS + WALL_SLACK_PER_ITER_NS.get(self.v.device, 30_000) * count
        return claimed >= 0.5 * work - slack, claimed, work

    def _recheck(self, mine: list[Batch], inputs: dict[str, Any], axes: dict[str, int], where: str,
                 kept_before: int) -> None:  # fmt: skip
        """Fetch outputs of timed iterations chosen now, after the fact, and compare them."""
        specs = self.judge.output_specs(axes)
        per_iter = sum(_nbytes(s) for s in specs) or 1
        keepable = max(1, MAX_KEPT_BYTES // per_iter - kept_before)
        order = [(b, i) for b in mine for i in range(len(b.times_ns))][:keepable]
        rng = secrets.SystemRandom()
        picks = rng.sample(order, min(recheck_count(self.options.recheck, per_iter), len(order)))
        reply, tensors = self.candidate.request("fetch", {"which": [[b.batch_id, i] for b, i in picks]},
                                                timeout_s=self.options.timeout_s)  # fmt: skip
        if reply.get("missing"):
            self.book.failed("timed_outputs", f"{where}: outputs of timed iterations {reply['missing'][:3]} not kept")
            return
        for batch, index in picks:
            seeds = iteration_seeds(batch.seed, batch.warmup + len(batch.times_ns))
            fresh = fresh_inputs(inputs, seeds[batch.warmup + index])
            ref = self.judge.reference_outputs(fresh, axes, where)
            outs = [tensors.get(f"{batch.batch_id}:{index}:{j}") for j in range(len(specs))]
            ok, detail = self.judge.compare_outputs(outs, ref)
            if not ok:
                self.book.failed("timed_outputs", f"{where}: timed iteration {index} of batch {batch.batch_id}: {detail}")
                return
        total = sum(len(b.times_ns) for b in mine)
        self.book.passed("timed_outputs", f"{total} timed iterations on fresh inputs; {len(picks)} per workload re-checked")

    def _check_physics(self, result: WorkloadResult, axes: dict[str, int], where: str) -> None:
        floor_ms, why = physics_floor_ms(self.judge.definition, axes, self.v.device)
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
