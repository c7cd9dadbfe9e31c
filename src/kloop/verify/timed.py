"""Timing on the supervisor's clock: rounds of randomly ordered batches on fresh inputs.

For every listed workload that passed correctness, each round draws new, independent inputs for
every call of a batch (the definition's own generator, a new seed per call: nothing derived from
one staged tensor) and times one batch in every box (candidate, baseline, and the current best
when the loop asks for a direct comparison) in an order drawn for that round. The clock that
decides is the supervisor's own, from sending a batch to reading its reply; inputs arrive and all
outputs leave inside that window, so no work can move before or after it. The harness's own cost
per batch was measured with no-op batches before the candidate was imported (`calibrate`) and is
subtracted the same way for every box. Outputs of calls picked afterwards with secret randomness
are re-checked against the reference; the sandbox's own per-call times are only cross-checked.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kloop.task.schema import Workload
from kloop.verify.checks import CheckBook
from kloop.verify.process import SandboxProcess
from kloop.verify.result import Comparison, Summary, VerifyStatus, WorkloadResult
from kloop.verify.stats import (
    LogRatio,
    Overhead,
    batch_latency_ns,
    between_boxes,
    fit_overhead,
    geomean,
    latency_ci_ms,
)
from kloop.verify.stats import paired_log_ratio as paired
from kloop.verify.workload import POISONS, WorkloadJudge, derive_seed

TARGET_BATCH_S = 0.01  # short batches, many rounds: the boxes of a round run close together in time
MAX_ITERATIONS = 256  # tiny calls: the harness costs more than they do, so bound the batch by count
BATCH_BYTES = 24 << 20  # inputs plus outputs of one batch travel inside its window: bound them
RECHECK_BYTES = 4 << 20  # small outputs are cheap to re-check: re-check up to this many bytes of them
RECHECK_MAX = 64  # ... but never more than this many calls per workload
CALIBRATION_REPEATS = 3
CANDIDATE = "candidate"


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
    """Per-round per-call costs of one workload, per box label: net of the harness's cost, and whole."""

    rounds_ns: dict[str, list[float]] = field(default_factory=dict)
    gross_ns: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class TimingOutcome:
    """What the session measured; the supervisor puts it into the verdict."""

    vs: dict[str, LogRatio] = field(default_factory=dict)
    """Geometric-mean log speedup of the candidate over each other box (baseline, incumbent)."""
    note: str | None = None
    rounds: int = 0
    clock: str = "wall"


def batch_size(judge: WorkloadJudge, plan: TimingPlan, uuid: str, axes: dict[str, int], inputs: dict[str, Any]) -> int:
    """At least `plan.iterations` calls (more for fast ones), within the byte budget of one batch."""
    per_call = max(judge.call_ns.get(uuid, 0), 1_000)
    count = max(plan.iterations, min(MAX_ITERATIONS, int(TARGET_BATCH_S * 1e9 / per_call)))
    return max(1, min(count, BATCH_BYTES // max(call_bytes(judge, axes, inputs), 1)))


def max_batch(judge: WorkloadJudge, axes: dict[str, int], inputs: dict[str, Any]) -> int:
    return max(1, min(MAX_ITERATIONS, BATCH_BYTES // max(call_bytes(judge, axes, inputs), 1)))


def call_bytes(judge: WorkloadJudge, axes: dict[str, int], inputs: dict[str, Any]) -> int:
    import torch

    ins = sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))
    return ins + sum(_nbytes(s) for s in judge.output_specs(axes))


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Generate inputs on one thread: torch's pool spins against the sandboxes on a loaded machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fresh_calls(judge: WorkloadJudge, workload: Workload, label: str, count: int) -> list[dict[str, Any]]:
    """`count` independent input sets, each from its own seed: no call's inputs derive from another's."""
    from kloop.task.inputs import make_inputs

    t0 = time.perf_counter_ns()
    with _one_thread():
        calls = [make_inputs(judge.definition, workload, seed=derive_seed(judge.seed, f"{workload.uuid}:{label}:{i}"),
                             device="cpu", task_root=judge.task.root) for i in range(count)]  # fmt: skip
    judge.phase_ns["timed_inputs"] += time.perf_counter_ns() - t0
    return calls


def box_cpu_ns(box: SandboxProcess, settled: bool = False) -> int | None:
    """CPU time of everything in the box (its cgroup, read by the kernel's accounting), or None."""
    containment = getattr(box, "containment", None)
    return containment.cpu_time_ns(settled) if containment is not None else None


def clock_kind(boxes: list[SandboxProcess], device: str) -> str:
    """`cpu-time` when every box's cgroup reports CPU time and the work runs on the CPU, else `wall`.

    CPU time does not grow while a box waits for a core, so a loaded machine stretches it far less
    than wall time; on a GPU the work is not the box's CPU time, so the wall clock decides there.
    """
    if device == "cpu" and all(box_cpu_ns(b) is not None for b in boxes):
        return "cpu-time"
    return "wall"


def send_batch(box: SandboxProcess, judge: WorkloadJudge, axes: dict[str, int], calls: list[dict[str, Any]],
               timeout_s: float, noop: bool = False, per_call_ns: int = 1_000) -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:  # fmt: skip
    """One batch: ({clock kind: ns from send to reply}, reply, output tensors), read on the supervisor's side."""
    import torch

    order = list(calls[0])
    scalars = {k: v for k, v in calls[0].items() if not isinstance(v, torch.Tensor)}
    tensors = {k: torch.stack([c[k] for c in calls]) for k, v in calls[0].items() if isinstance(v, torch.Tensor)}
    header = {"iterations": len(calls), "order": order, "scalars": scalars, "outputs": judge.output_specs(axes),
              "poison": POISONS[0], "noop": noop}  # fmt: skip
    per_call_s = max(per_call_ns, 1_000) / 1e9
    cpu0 = box_cpu_ns(box, settled=True)
    start = time.perf_counter_ns()
    reply, outs = box.request("time", header, tensors, timeout_s=timeout_s + 10 * per_call_s * len(calls))
    took = {"wall": time.perf_counter_ns() - start}
    cpu1 = box_cpu_ns(box, settled=True)
    if cpu0 is not None and cpu1 is not None:
        took["cpu-time"] = cpu1 - cpu0
    return took, reply, outs


def calibrate(box: SandboxProcess, judge: WorkloadJudge, workloads: list[Workload],
              timeout_s: float) -> dict[str, dict[str, Overhead]]:  # fmt: skip
    """The harness's own cost per batch, per workload: no-op batches before any candidate code loads.

    Fixed now, it cannot be inflated by the candidate later (a larger subtraction would be a gift).
    Two batch sizes give a fixed part (request, reply) and a per-call part (inputs in, outputs out).
    """
    from kloop.task.shapes import resolve_axes

    out: dict[str, dict[str, Overhead]] = {}
    for workload in workloads:
        axes = resolve_axes(judge.definition, workload)
        small_calls = fresh_calls(judge, workload, "calibrate", 1)
        large = max_batch(judge, axes, small_calls[0])
        calls = fresh_calls(judge, workload, "calibrate", large)
        judge.stage(box, calls[0], axes, timeout_s)
        send_batch(box, judge, axes, calls[:1], timeout_s, noop=True)  # first-call costs land here, unused
        small_w, large_w = [], []
        for _ in range(CALIBRATION_REPEATS):
            small_w.append(send_batch(box, judge, axes, calls[:1], timeout_s, noop=True)[0])
            large_w.append(send_batch(box, judge, axes, calls, timeout_s, noop=True)[0])
        out[workload.uuid] = {kind: fit_overhead((1, [w[kind] for w in small_w]), (large, [w[kind] for w in large_w]))
                              for kind in small_w[0]}  # fmt: skip
    return out


@dataclass(frozen=True)
class Picked:
    """One timed call chosen for a re-check: where it was, what went in, what came out."""

    round: int
    call: int
    inputs: dict[str, Any]
    outputs: list[Any]


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
                self.outcome.vs[label] = between_boxes(geomean(parts))  # one pair of boxes for all workloads
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
        timing = WorkloadTiming(rounds_ns={label: [] for label in self.boxes}, gross_ns={label: [] for label in self.boxes})
        if self.plan.warmup:
            warm = fresh_calls(self.judge, workload, "warmup", self.plan.warmup)
            for label in self._order():
                self._batch(label, axes, warm, where)
        cost = self._harness_cost(workload, axes, count, overhead.of(count))
        picks_left = recheck_count(self.plan.recheck, sum(_nbytes(s) for s in self.judge.output_specs(axes)))
        picked: list[Picked] = []
        for r in range(self.plan.rounds):
            calls = fresh_calls(self.judge, workload, f"round{r}", count)
            for label in self._order():
                took, reply, outs = self._batch(label, axes, calls, where)
                timing.rounds_ns[label].append(batch_latency_ns(took[self.clock], cost, count))
                timing.gross_ns[label].append(took[self.clock] / count)
                if label == CANDIDATE:
                    self._cross_check(sum(reply["times_ns"]), took["wall"], where)
                    want = math.ceil(picks_left / (self.plan.rounds - r))
                    picks_left -= want
                    picked += self._pick(calls, outs, reply, axes, where, want, r)
        self._recheck(picked, axes, where)  # after the rounds: no box's batch follows the supervisor's reference work
        self._record(workload, result, timing, axes, where, count)

    def _harness_cost(self, workload: Workload, axes: dict[str, int], count: int, fallback: float) -> float:
        """The harness's own cost of a batch (net latency only; speedups use whole batches): the median
        of no-op batches in the baseline's box, where the candidate's code never runs.

        Every box runs the same no-op batches, in a drawn order: extra batches in one box only warm
        that box up (an A/A run of a tiny workload read 0.93x until the candidate's box got them too).
        """
        if "baseline" not in self.boxes:
            return fallback
        calls = fresh_calls(self.judge, workload, "harness", count)
        walls: list[int] = []
        for _ in range(3):
            for label in self._order():
                took = send_batch(self.boxes[label], self.judge, axes, calls, self.plan.timeout_s, noop=True,
                                  per_call_ns=self.per_call_ns)[0]  # fmt: skip
                if label == "baseline":
                    walls.append(took[self.clock])
        return float(statistics.median(walls))

    def _order(self) -> list[str]:
        """This round's order of boxes, drawn with the supervisor's secret randomness."""
        order = list(self.boxes)
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

    def _pick(self, calls: list[dict[str, Any]], outs: dict[str, Any], reply: dict[str, Any], axes: dict[str, int],
              where: str, want: int, round_index: int) -> list[Picked]:  # fmt: skip
        """Every call's outputs came back stacked; keep those of calls picked now, with secret randomness.

        They are compared with the reference only after the last round (`_recheck`): computed here,
        the float64 reference ran between the candidate's batch and the next box's, and that box
        alone started on caches the supervisor had just used.
        """
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
        # clones: a view would keep the round's whole output slab alive until the last round
        return [Picked(round_index, i, calls[i], [outs[f"out{j}"][i].clone() for j in range(len(specs))])
                for i in self.rng.sample(range(len(calls)), min(want, len(calls)))]  # fmt: skip

    def _recheck(self, picked: list[Picked], axes: dict[str, int], where: str) -> None:
        """The picked calls' outputs against the reference on the same inputs."""
        for pick in picked:
            ref = self.judge.reference_outputs(pick.inputs, axes, where)
            ok, detail = self.judge.compare_outputs(pick.outputs, ref)
            if not ok:
                self.book.failed("timed_outputs", f"{where}: call {pick.call} of timing round {pick.round}: {detail}")
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
        # Speedups are ratios of whole batch costs, the harness's share in both: subtracting a noisy
        # harness cost from calls cheaper than it would blow the ratio's spread up; this way a gain is
        # understated for such calls, never overstated, and the replicates stay tight.
        ratios = {label: paired(theirs, timing.gross_ns[CANDIDATE]) for label, theirs in timing.gross_ns.items()
                  if label != CANDIDATE}  # fmt: skip
        if "baseline" in ratios:
            result.baseline_latency_ms = latency_ci_ms(timing.rounds_ns["baseline"])[0]
            result.speedup, result.speedup_ci = ratios["baseline"].speedup, between_boxes(ratios["baseline"]).ci()
        if "incumbent" in ratios:
            inc = between_boxes(ratios["incumbent"])
            result.incumbent_speedup, result.incumbent_speedup_ci = inc.speedup, inc.ci()
        self.per_workload[workload.uuid] = ratios
        self.book.passed("timed_outputs", f"{len(mine) * count} timed calls, each on its own fresh inputs; "
                                          "calls picked afterwards re-checked")
        self._check_physics(latency_ci_ms(timing.gross_ns[CANDIDATE])[0], axes, where)
        result.status = VerifyStatus.PASSED if self.book.ok("timed_outputs") else VerifyStatus.REJECTED

    def _check_physics(self, gross_ms: float, axes: dict[str, int], where: str) -> None:
        """On the whole per-call cost: a noisy subtraction must never make an honest call look impossible."""
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
