"""Timing on clocks outside the candidate's process: rounds of randomly ordered batches, calls handed over one by one.

For every listed workload that passed correctness, each round draws new, independent inputs for
every call of a batch (the definition's own generator, a new seed per call: nothing derived from
one staged tensor) and times one batch in every box (candidate, baseline, and the current best
when the loop asks for a direct comparison) in an order drawn for that round. Inside a batch the
supervisor hands the calls over one at a time through memory it owns (`kloop.verify.handoff`):
call i's inputs exist in the sandbox only from its `go`, and its outputs are taken at its `done`.

One definition of a call's cost, used for every figure (verdict, trace, status, report): the
box's CPU time over the batch (its cgroup, read by the supervisor) divided by the calls, the one
hand-off per call included; on a GPU, or without a cpuacct group, the supervisor's go-to-done wall
time instead. Latency is its trimmed geometric mean over rounds; speedup = baseline latency /
candidate latency, with an interval from the paired rounds (`kloop.verify.stats`). The hand-off's
own cost (no-op calls in the baseline's box) is reported beside it and never subtracted: it is in
both boxes' costs, so identical code still reads 1x and a kernel's gain reads smaller, never larger.
Where it is more than `HARNESS_BOUND` of a call's cost the workload is flagged "harness-bound"
(its speedup is diluted toward 1x by the hand-off), but it is still timed and counted.
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from kloop.task.schema import Workload
from kloop.verify.batches import BoxSlots, Take, box_cpu_ns, layout_for
from kloop.verify.checks import CheckBook
from kloop.verify.handoff import Layout, pack_calls, slot_tensor
from kloop.verify.process import SandboxProcess
from kloop.verify.result import Comparison, Summary, VerifyStatus, WorkloadResult
from kloop.verify.stats import (
    INTERVAL_METHOD,
    LogRatio,
    Overhead,
    between_boxes,
    geomean,
    latency_ci_ms,
    paired_ratio,
    trimmed_geomean,
)
from kloop.verify.threads import one_thread, single_threaded
from kloop.verify.workload import POISONS, WorkloadJudge, derive_seed

TARGET_BATCH_S = 0.002  # short batches, many rounds: the boxes of a round run close together in time
FAST_BATCH_S = 0.0003
"""The fastest box's batch lasts at least this long when a slower box sets the count: what 32 calls
(`MAX_ITERATIONS`) of a 10 us kernel always gave (examples/rmsnorm, 1 token, on a quiet machine), so
no comparison gets shorter batches than the candidate-only sizing already gave its fastest calls."""
MAX_ITERATIONS = 32  # every call is one hand-off (two context switches): bound the batch by count; the
# settled cgroup CPU time is exact to the nanosecond, so a short batch still resolves its calls
BATCH_BYTES = 24 << 20  # inputs plus outputs of one batch travel inside its window: bound them
RECHECK_BYTES = 4 << 20  # small outputs are cheap to re-check: re-check up to this many bytes of them
RECHECK_MAX = 64  # ... but never more than this many calls per workload
CALIBRATION_REPEATS = 3
CANDIDATE = "candidate"
HARNESS_BOUND = 0.25
"""Above this share of a call's cost the hand-off is most of what gets timed: the workload is flagged
(its speedup understates the kernel's), not dropped. Dropping it left the tiny CPU tasks with no
speedup at all, and which workloads were dropped flapped with load around the threshold."""
OFF_CPU_FACTOR = 1.5
OFF_CPU_MIN_NS = 1_000_000
"""A candidate is flagged when it sleeps over 1 ms per call more than the baseline, and more than
half its own CPU time (its wall/CPU then exceeds 1.5x what load explains): sleeping, waiting on
I/O, a lock or a device, none of which the CPU-time clock sees. At 50 us, identical code was
flagged (and rejected) on the 2-core machine running the suite: 70 us more "sleep" per call for the
candidate than for the same code as baseline (page faults and wake-up latency schedstat does not
count as waiting for a CPU). Even at 1 ms, a host stalled for other reasons (CI at load 10: honest
rmsnorm 1.2 ms per call "asleep" more than the baseline) flagged honest code, so a flagged workload
is timed a second time and only a candidate that sleeps through both timings is flagged."""


@dataclass(frozen=True)
class TimingPlan:
    """What the supervisor decided about timing before it started (no Verification needed)."""

    device: str
    rounds: int
    iterations: int
    warmup: int
    recheck: int
    timeout_s: float
    seed: int


@dataclass
class WorkloadTiming:
    """Per-round per-call cost (on the decisive clock) and wall time of one workload, per box label."""

    cost_ns: dict[str, list[float]] = field(default_factory=dict)
    wall_ns: dict[str, list[float]] = field(default_factory=dict)
    asleep_ns: dict[str, list[float]] = field(default_factory=dict)
    harness_ns: float = 0.0
    """The hand-off's own cost per call: no-op calls in the baseline's box (or, without one, in the
    candidate's box before its code was imported)."""
    retimed: bool = False
    """The first timing read the candidate asleep (`off_cpu`), so these are a second timing's rounds."""


@dataclass
class TimingOutcome:
    """What the session measured; the supervisor puts it into the verdict."""

    vs: dict[str, LogRatio] = field(default_factory=dict)
    """Geometric-mean log speedup of the candidate over each other box (baseline, incumbent)."""
    note: str | None = None
    rounds: int = 0
    clock: str = "wall"


def batch_size(judge: WorkloadJudge, plan: TimingPlan, uuid: str, axes: dict[str, int], inputs: dict[str, Any],
               calls_ns: list[float] | None = None) -> int:  # fmt: skip
    """At least `plan.iterations` calls (more for fast ones), within the byte budget of one batch.

    Without `calls_ns` (before the warm-up): sized from the candidate's call (`judge.call_ns`) so
    that its batch lasts about `TARGET_BATCH_S`; this is also the most calls a batch gets (the
    slots are laid out for it). With `calls_ns` (each box's fastest warm-up call, `fastest_call_ns`):
    sized so that the slowest box's batch lasts about `TARGET_BATCH_S`, but the fastest box's at
    least `FAST_BATCH_S`. Sized from the candidate's call alone, a naive baseline's batch lasted
    many times the target (examples/rmsnorm, 17 tokens: 32 calls of a 0.45 ms row loop where the
    candidate took 40 us), and most of a verification's timing was the baseline's surplus calls.
    Every box gets the same count, so the pairing is unchanged. `plan.iterations` is the least count
    only while the slowest box's call is shorter than the target: a call that long is a whole batch,
    and a second one doubled the slowest box's share of the timing (examples/silu_and_mul, 384 tokens:
    2 x 19 ms of the naive baseline per round, half of all the calls a verification timed).
    """
    own = max(judge.call_ns.get(uuid, 0), 1_000)
    most = max(plan.iterations, min(MAX_ITERATIONS, int(TARGET_BATCH_S * 1e9 / own)))
    most = max(1, min(most, BATCH_BYTES // max(call_bytes(judge, axes, inputs), 1)))
    if not calls_ns:
        return most
    slowest, fastest = max(max(calls_ns), 1_000), max(min(calls_ns), 1_000)
    count = max(int(TARGET_BATCH_S * 1e9 / slowest), math.ceil(FAST_BATCH_S * 1e9 / fastest))
    least = plan.iterations if slowest < TARGET_BATCH_S * 1e9 else 1
    return max(1, min(most, max(least, count)))


def fastest_call_ns(take: Take) -> float:
    """A box's fastest call of a batch, as the box timed it: sizes batches like `judge.call_ns`, decides nothing.

    Not the batch's cost over its calls: the first warm-up call in fresh slots pays their page
    faults (at load 9, 0.64 ms per call on average where the calls took 0.12 ms), and sized from
    that a 15 us kernel got 2-call batches. For the same reason a warm-up of one call sizes nothing
    (`--warmup 1`: the red-team options; 3-call batches there widened a 6x-slower path's interval
    past 1.0, where the candidate-only size gave 11).
    """
    times = take.report.get("times_ns") or [0]
    return float(min(times))


def max_batch(judge: WorkloadJudge, axes: dict[str, int], inputs: dict[str, Any]) -> int:
    return max(1, min(MAX_ITERATIONS, BATCH_BYTES // max(call_bytes(judge, axes, inputs), 1)))


def call_bytes(judge: WorkloadJudge, axes: dict[str, int], inputs: dict[str, Any]) -> int:
    import torch

    ins = sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))
    return ins + sum(_nbytes(s) for s in judge.output_specs(axes))


def fresh_calls(judge: WorkloadJudge, workload: Workload, label: str, count: int) -> list[dict[str, Any]]:
    """`count` independent input sets, each from its own seed: no call's inputs derive from another's."""
    from kloop.task.inputs import make_inputs

    t0 = time.perf_counter_ns()
    with one_thread():  # torch's pool spins against the sandboxes on a loaded machine
        calls = [make_inputs(judge.definition, workload, seed=derive_seed(judge.seed, f"{workload.uuid}:{label}:{i}"),
                             device="cpu", task_root=judge.task.root) for i in range(count)]  # fmt: skip
    judge.phase_ns["timed_inputs"] += time.perf_counter_ns() - t0
    return calls


def packed_calls(layout: Layout, calls: list[dict[str, Any]]) -> bytearray:
    """`pack_calls` with the first poison, on one torch thread (`kloop.verify.threads`)."""
    with one_thread():
        return pack_calls(layout, calls, POISONS[0])


def clock_kind(boxes: list[SandboxProcess], device: str) -> str:
    """`cpu-time` when every box's cgroup reports CPU time and the work runs on the CPU, else `wall`.

    CPU time does not grow while a box waits for a core, so a loaded machine stretches it far less
    than wall time; on a GPU the work is not the box's CPU time, so the wall clock decides there.
    """
    if device == "cpu" and all(box_cpu_ns(b) is not None for b in boxes):
        return "cpu-time"
    return "wall"


def calibrate(box: SandboxProcess, judge: WorkloadJudge, workloads: list[Workload],
              timeout_s: float) -> dict[str, dict[str, Overhead]]:  # fmt: skip
    """The hand-off's own cost per call, per workload: no-op batches before any candidate code loads.

    Used only when there is no baseline box to measure it in; fixed now, the candidate cannot move it.
    """
    from kloop.task.shapes import resolve_axes

    out: dict[str, dict[str, Overhead]] = {}
    for workload in workloads:
        axes = resolve_axes(judge.definition, workload)
        first = fresh_calls(judge, workload, "calibrate", 1)
        count = max_batch(judge, axes, first[0])
        specs = judge.output_specs(axes)
        layout = layout_for(first[0], specs, count)
        packed = packed_calls(layout, fresh_calls(judge, workload, "calibrate", count))
        slots = BoxSlots(box, layout, first[0], specs, timeout_s)
        try:
            slots.run(packed, count, True, timeout_s)  # first-call costs land here, unused
            takes = [slots.run(packed, count, True, timeout_s) for _ in range(CALIBRATION_REPEATS)]
        finally:
            slots.close()
        per = {"wall": statistics.median(t.wall_ns / count for t in takes)}
        if all(t.cpu_ns is not None for t in takes):
            per["cpu-time"] = statistics.median(t.cpu_ns / count for t in takes)  # type: ignore[operator]
        out[workload.uuid] = {kind: Overhead(0.0, value) for kind, value in per.items()}
    return out


@dataclass(frozen=True)
class Picked:
    """One timed call chosen for a re-check: where it was, what went in, what came out."""

    round: int
    call: int
    inputs: dict[str, Any]
    outputs: list[Any]


def sleep_excess_ns(timing: WorkloadTiming) -> float | None:
    """Median over rounds of how much longer per call the candidate slept than the baseline.

    Paired by round: the two boxes' batches of a round run back to back, so load that drifts over
    the rounds cancels; None without schedstat readings for both boxes."""
    mine, theirs = timing.asleep_ns.get(CANDIDATE), timing.asleep_ns.get("baseline")
    if not mine or not theirs or len(mine) != len(theirs):
        return None
    return float(statistics.median(c - b for c, b in zip(mine, theirs, strict=True)))


def asleep(timing: WorkloadTiming) -> bool:
    """The candidate sleeps over OFF_CPU_MIN_NS per call more than the baseline, and over half its CPU time."""
    extra = sleep_excess_ns(timing)
    if extra is None:
        return False
    return extra > OFF_CPU_MIN_NS and extra > (OFF_CPU_FACTOR - 1) * trimmed_geomean(timing.cost_ns[CANDIDATE])


class TimingSession:
    """Times the listed workloads; records timed_outputs, wall_clock, physics_floor and off_cpu in `book`."""

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
        self.axes: dict[str, int] = {}

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
            if parts and label not in self.failed:
                self.outcome.vs[label] = between_boxes(geomean(parts))  # one pair of boxes for all workloads
        if not others:
            self.outcome.note = "no baseline timed; no speedup"
        return self.outcome

    # -- one workload ------------------------------------------------------------------------------
    def _time_workload(self, workload: Workload, result: WorkloadResult) -> None:
        inputs, axes = self.judge.inputs_for(workload)
        self.axes = axes
        where = self.judge.label(workload, axes)
        count = batch_size(self.judge, self.plan, workload.uuid, axes, inputs)  # the most calls a batch gets
        self.per_call_ns = self.judge.call_ns.get(workload.uuid, 1_000)
        specs = self.judge.output_specs(axes)
        layout = layout_for(inputs, specs, max(count, self.plan.warmup))
        slots: dict[str, BoxSlots] = {}
        try:
            for label in self._order():
                slots[label] = BoxSlots(self.boxes[label], layout, inputs, specs, self.plan.timeout_s)
            timing, picked = self._rounds(workload, slots, layout, inputs, where)
            if self.clock == "cpu-time" and asleep(timing):  # a stalled host, or a sleeper:
                timing, again = self._rounds(workload, slots, layout, inputs, where)  # only a sleeper sleeps twice
                timing.retimed, picked = True, picked + again
            self._recheck(picked, where)  # after every round: no box's batch follows the supervisor's reference work
        finally:
            for s in slots.values():
                s.close()
        self._record(workload, result, timing, axes, where)

    def _rounds(self, workload: Workload, slots: dict[str, BoxSlots], layout: Layout, inputs: dict[str, Any],
                where: str) -> tuple[WorkloadTiming, list[Picked]]:  # fmt: skip
        """Warm-up, the hand-off's calibration and the rounds; returns the calls picked for re-checking."""
        timing = WorkloadTiming(cost_ns={label: [] for label in slots}, wall_ns={label: [] for label in slots},
                                asleep_ns={label: [] for label in slots})  # fmt: skip
        calls_ns: list[float] = []
        if self.plan.warmup:
            warm = self._pack(layout, workload, "warmup", self.plan.warmup)
            for label in self._order():
                take = self._batch(label, slots[label], warm, self.plan.warmup, where)
                if self.plan.warmup >= 2:  # one warm-up call is the cold one: it would size batches too small
                    calls_ns.append(fastest_call_ns(take))
        count = batch_size(self.judge, self.plan, workload.uuid, self.axes, inputs, calls_ns)
        self.per_call_ns = max([self.per_call_ns, *(int(c) for c in calls_ns)])
        timing.harness_ns = self._harness_cost(workload, slots, layout, count, where)
        picks_left = recheck_count(self.plan.recheck, sum(_nbytes(s) for s in self.judge.output_specs(self.axes)))
        picked: list[Picked] = []
        for r in range(self.plan.rounds):
            calls = fresh_calls(self.judge, workload, f"round{r}", count)
            packed = packed_calls(layout, calls)
            for label in self._order():
                take = self._batch(label, slots[label], packed, count, where)
                timing.cost_ns[label].append(self._cost(take) / count)
                timing.wall_ns[label].append(take.wall_ns / count)
                if take.asleep_ns is not None:
                    timing.asleep_ns[label].append(take.asleep_ns / count)
                if label == CANDIDATE:
                    self._cross_check(take, where)
                    self._check_inputs(take, packed, layout, where, r)
                    want = math.ceil(picks_left / (self.plan.rounds - r))
                    picks_left -= want
                    picked += self._pick(calls, take, layout, where, want, r)
        return timing, picked

    def _cost(self, take: Take) -> float:
        return float(take.cpu_ns if self.clock == "cpu-time" and take.cpu_ns is not None else take.wall_ns)

    def _pack(self, layout: Layout, workload: Workload, label: str, count: int) -> bytearray:
        return packed_calls(layout, fresh_calls(self.judge, workload, label, count))

    def _harness_cost(self, workload: Workload, slots: dict[str, BoxSlots], layout: Layout, count: int,
                      where: str) -> float:  # fmt: skip
        """The hand-off's own cost per call: the median of no-op batches in the baseline's box, where
        the candidate's code never runs. Every box runs the same no-op batches, in a drawn order, so
        no box is warmed up more than another."""
        if "baseline" not in slots:
            return self.overhead.get(workload.uuid, {}).get(self.clock, Overhead(0.0, 0.0)).per_call_ns
        packed = self._pack(layout, workload, "harness", count)
        costs: list[float] = []
        for _ in range(CALIBRATION_REPEATS):
            for label in self._order():
                take = self._batch(label, slots[label], packed, count, where, noop=True)
                if label == "baseline":
                    costs.append(self._cost(take) / count)
        return float(statistics.median(costs))

    def _order(self) -> list[str]:
        """This round's order of boxes, drawn with the supervisor's secret randomness."""
        order = list(self.boxes)
        self.rng.shuffle(order)
        return order

    def _batch(self, label: str, slots: BoxSlots, packed: bytearray, count: int, where: str,
               noop: bool = False) -> Take:  # fmt: skip
        take = slots.run(packed, count, noop, self.plan.timeout_s + 10 * max(self.per_call_ns, 1_000) / 1e9)
        reply = take.report
        at = f"{where}: {label} timing batch"
        if label != CANDIDATE and not reply.get("ok"):  # not the candidate's fault, but no comparison with it
            self.failed.add(label)
            self.outcome.note = f"{at} failed: {str(reply.get('error'))[:300]}; no speedup over the {label}"
            raise _Stop
        if not reply.get("ok"):
            check = "runtime" if reply.get("kind") == "runtime" else "protocol"
            self.book.failed(check, f"{at}: {str(reply.get('error'))[:500]}")
            raise _Stop
        times = reply.get("times_ns")
        if not isinstance(times, list) or len(times) != count or not all(isinstance(t, int) and t >= 0 for t in times):
            self.book.failed("protocol", f"{at}: malformed timing report")
            raise _Stop
        if label == CANDIDATE:
            statuses: list[VerifyStatus] = []
            self.judge.check_sandbox(reply, at, statuses)
            if statuses:
                raise _Stop
            bad = reply.get("bad")
            if bad:
                self.book.failed("timed_outputs", f"{at}: calls {list(bad)[:3]} returned outputs of the wrong type, "
                                                  "shape or dtype")  # fmt: skip
                raise _Stop
        return take

    @single_threaded
    def _check_inputs(self, take: Take, packed: bytearray, layout: Layout, where: str, round_index: int) -> None:
        """Each timed call's inputs as the supervisor read them at its `done`, against what it wrote."""
        import torch

        # Compared as 8-byte words (slots and fields are 64-byte aligned): 7x faster than bytewise.
        n, slot, head = take.count, layout.slot_bytes // 8, layout.input_bytes // 8
        seen = torch.frombuffer(take.after, dtype=torch.int64, count=n * slot).view(n, slot)[:, :head]
        sent = torch.frombuffer(packed, dtype=torch.int64, count=n * slot).view(n, slot)[:, :head]
        if torch.equal(seen, sent):
            self.book.passed("inputs_unmodified", "timed calls too (read by the supervisor at each call's end)")
            return
        call = int((seen != sent).any(dim=1).nonzero()[0, 0])
        self.book.failed("inputs_unmodified", f"{where}: timed call {call} of round {round_index} changed its inputs")
        raise _Stop

    @single_threaded
    def _pick(self, calls: list[dict[str, Any]], take: Take, layout: Layout, where: str, want: int,
              round_index: int) -> list[Picked]:  # fmt: skip
        """Keep the outputs of calls picked now, with secret randomness, as the supervisor read them at `done`.

        They are compared with the reference only after the last round (`_recheck`): computed here,
        the float64 reference would run between the candidate's batch and the next box's.
        """
        names = [f.name for f in layout.fields if f.output]
        return [Picked(round_index, i, calls[i], [slot_tensor(take.after, layout, i, n, True) for n in names])
                for i in self.rng.sample(range(take.count), min(want, take.count))]  # fmt: skip

    @single_threaded
    def _recheck(self, picked: list[Picked], where: str) -> None:
        """The picked calls' outputs against the reference on the same inputs, on one torch thread: up
        to 64 small references a workload, where a loaded machine's OpenMP waits cost most (a
        verification's re-checks 0.2 s quiet, 1.7 s beside a test suite on two threads)."""
        for pick in picked:
            ref = self.judge.reference_outputs(pick.inputs, self.axes, where)
            ok, detail = self.judge.compare_outputs(pick.outputs, ref)
            if not ok:
                self.book.failed("timed_outputs", f"{where}: call {pick.call} of timing round {pick.round}: {detail}")
                raise _Stop

    def _cross_check(self, take: Take, where: str) -> None:
        """The sandbox's own times are not the decisive clock; more time than its calls held is a lie."""
        claimed = sum(take.report["times_ns"])
        if claimed > take.wall_ns + 1_000_000:
            self.book.failed("wall_clock", f"{where}: sandbox reports {claimed / 1e6:.2f} ms in calls that took "
                                           f"{take.wall_ns / 1e6:.2f} ms")  # fmt: skip
            raise _Stop
        self.book.passed("wall_clock", f"latency on the supervisor's side ({self.clock}); the sandbox's own times fit")

    def _record(self, workload: Workload, result: WorkloadResult, timing: WorkloadTiming, axes: dict[str, int],
                where: str) -> None:  # fmt: skip
        """Every per-workload figure from one definition: per-call cost on the decisive clock."""
        mine = timing.cost_ns[CANDIDATE]
        ratios = {label: paired_ratio(theirs, mine) for label, theirs in timing.cost_ns.items() if label != CANDIDATE}
        latency, ci = latency_ci_ms(mine)
        result.wall_ms = trimmed_geomean(timing.wall_ns[CANDIDATE]) / 1e6
        result.harness_ms = timing.harness_ns / 1e6
        costs = [latency] + ([latency_ci_ms(timing.cost_ns["baseline"])[0]] if "baseline" in ratios else [])
        share = timing.harness_ns / 1e6 / max(min(costs), 1e-9)
        self.book.passed("timed_outputs", f"{len(mine)} rounds of calls handed over one by one, each on its own "
                                          "fresh inputs; calls picked afterwards re-checked")  # fmt: skip
        self._check_physics(latency, axes, where)
        self._check_off_cpu(timing, where)
        result.status = VerifyStatus.PASSED if self.book.ok("timed_outputs") else VerifyStatus.REJECTED
        if "baseline" in ratios:
            result.baseline_wall_ms = trimmed_geomean(timing.wall_ns["baseline"]) / 1e6
        if share > HARNESS_BOUND:  # flagged, still counted: the hand-off is in both boxes' costs
            result.harness_bound = True
            result.timing_note = (f"harness-bound: the hand-off costs {timing.harness_ns / 1e3:.1f} us of a "
                                  f"{min(costs) * 1e3:.1f} us call ({share:.0%}); latency and speedup include "
                                  "it on both sides, so the kernel's own gain is larger than the speedup shown")  # fmt: skip
        result.latency_ms, result.latency_ci_ms = latency, ci
        if "baseline" in ratios:  # through the paired rounds: speedup = baseline latency / latency exactly
            base = between_boxes(ratios["baseline"])
            result.speedup, result.speedup_ci = base.speedup, base.ci()
            result.baseline_latency_ms = latency * base.speedup
        if "incumbent" in ratios:
            inc = between_boxes(ratios["incumbent"])
            result.incumbent_speedup, result.incumbent_speedup_ci = inc.speedup, inc.ci()
        self.per_workload[workload.uuid] = ratios

    def _check_off_cpu(self, timing: WorkloadTiming, where: str) -> None:
        """Wall time beside CPU time: a candidate that sleeps per call much more than the baseline is flagged.

        Off-CPU time is split with the threads' schedstat: waiting for a CPU is load (both boxes
        see it), the rest of a call's wall time that is not CPU time is sleep, I/O, a lock or a device.
        """
        extra = sleep_excess_ns(timing)
        if self.clock != "cpu-time" or extra is None:
            self.book.skip("off_cpu", "needs the CPU-time clock, schedstat and a baseline timed beside the candidate")
            return
        c_cpu, c_wall = trimmed_geomean(timing.cost_ns[CANDIDATE]), trimmed_geomean(timing.wall_ns[CANDIDATE])
        b_cpu, b_wall = trimmed_geomean(timing.cost_ns["baseline"]), trimmed_geomean(timing.wall_ns["baseline"])
        ratios = f"wall/CPU {c_wall / max(c_cpu, 1.0):.2f} against the baseline's {b_wall / max(b_cpu, 1.0):.2f}"
        twice = " (and in a second timing of this workload)" if timing.retimed else ""
        if asleep(timing):
            self.book.failed("off_cpu", f"{where}: {ratios}: the candidate sleeps {extra / 1e6:.3f} ms per call more "
                             f"than the baseline{twice} (sleep, I/O, a lock or a device, not waiting for a CPU); the "
                             "CPU-time clock does not see that time, so its latency would understate what a caller "
                             "waits")  # fmt: skip
        else:
            again = "; timed twice (the first timing read a stall)" if timing.retimed else ""
            self.book.passed("off_cpu", f"{ratios}; asleep {max(extra, 0) / 1e3:.1f} us per call more than the "
                                        f"baseline{again}")  # fmt: skip

    def _check_physics(self, gross_ms: float, axes: dict[str, int], where: str) -> None:
        """On the whole per-call cost (the hand-off included): never makes an honest call look impossible."""
        floor_ms, why = physics_floor_ms(self.judge.definition, axes, self.plan.device)
        if floor_ms is None:
            self.book.skip("physics_floor", why)
            return
        if gross_ms < floor_ms:
            self.book.failed("physics_floor", f"{where}: {gross_ms:.4g} ms per call is below the floor {floor_ms:.4g} ms ({why})")
        else:
            self.book.passed("physics_floor", f"floor {floor_ms:.3g} ms ({why})")


class _Stop(Exception):
    """A batch failed; the failure (if the candidate's) is already in the CheckBook."""


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
        from kloop.device.detect import detect

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


def summarize(results: list[WorkloadResult], note: str | None, outcome: TimingOutcome | None) -> Summary:
    timed = [r.latency_ms for r in results if r.latency_ms is not None]
    summary = Summary(latency_ms_median=statistics.median(timed) if timed else None, timing_note=note)
    if outcome is None:
        return summary
    summary.clock = outcome.clock
    summary.interval = INTERVAL_METHOD
    if "baseline" in outcome.vs:
        base = outcome.vs["baseline"]
        summary.speedup_geomean, summary.speedup_ci = base.speedup, base.ci()
        summary.comparison = Comparison.of(base)
    if "incumbent" in outcome.vs:
        summary.incumbent = Comparison.of(outcome.vs["incumbent"])
    return summary


def recheck_count(minimum: int, output_bytes: int) -> int:
    """How many timed calls to re-check: many when outputs are small.

    A cache that is wrong on a quarter of the calls escapes three samples 42 % of the time and
    64 samples essentially never.
    """
    return max(minimum, min(RECHECK_MAX, RECHECK_BYTES // max(output_bytes, 1)))
