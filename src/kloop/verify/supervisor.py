"""The trusted side: one `Verification` per candidate, from secret seed to verdict.

The supervisor holds the task, draws the seed, generates inputs, computes the reference (float64
where the reference allows), sends the sandbox only the inputs of the workload at hand, compares
what comes back, times candidate and baseline interleaved, and writes the verdict. The sandbox is
asked for data only; every decision is taken here.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kloop.builder import default_cache_dir
from kloop.errors import HarnessFailure
from kloop.task.load import Task
from kloop.task.schema import Solution, Workload
from kloop.verify.checks import CheckBook
from kloop.verify.process import SandboxFailure, SandboxProcess, shared_pool
from kloop.verify.result import VerifyOptions, VerifyResult, VerifyStatus, WorkloadResult, worst
from kloop.verify.workload import WorkloadJudge, derive_seed

if TYPE_CHECKING:
    from kloop.verify.stats import Overhead
    from kloop.verify.timed import TimingOutcome

FAILURE_CHECK = {"died": "runtime", "timeout": "timeout", "memory": "memory", "protocol": "protocol"}
BUILD_TIMEOUT_FLOOR_S = 600.0


class Verification:
    """Verifies one solution against one task; `run()` returns the verdict."""

    def __init__(self, task: Task, solution: Solution, options: VerifyOptions, device: str,
                 baseline: Solution | None) -> None:  # fmt: skip
        self.task = task
        self.solution = solution
        self.options = options
        self.device = device
        self.baseline = baseline
        self.seed = options.seed if options.seed is not None else secrets.randbits(63)
        self.book = CheckBook()
        self.log_dir = options.log_dir or Path(tempfile.mkdtemp(prefix="kloop-verify-"))
        """Where fresh boxes write their logs: `--log-dir`, or a scratch folder removed at the end."""
        self.cache_dir = (options.cache_dir or default_cache_dir()).resolve()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.candidate: SandboxProcess | None = None
        self.base_box: SandboxProcess | None = None
        self.inc_box: SandboxProcess | None = None
        self.timing_meaningful = True
        self.dps = True
        self.results: list[WorkloadResult] = []
        self.phase_ns: dict[str, int] = {}
        self.timing: TimingOutcome | None = None
        self.overhead: dict[str, dict[str, Overhead]] = {}
        self.log_paths: dict[str, Path] = {}
        self.staged_builds: dict[str, dict] = {}
        """label -> manifest of a build a sandbox compiled (hashed before its code ran), to publish."""
        self.trusted: dict[str, SandboxProcess] | None = None
        """The baseline's and the current best's boxes that loaded (`_load_trusted_boxes`)."""
        self.trusted_loader: threading.Thread | None = None

    # -- entry ---------------------------------------------------------------------------------
    def run(self) -> VerifyResult:
        from kloop.verify.integrity import task_fingerprint, verify_integrity

        try:
            before = verify_integrity(self.task, self.options.expected_manifest, self.book)  # hashes the task once
            self.candidate = self._sandbox("candidate")
            if self._wants_speedup():
                self.base_box = self._sandbox("baseline")
                if self.options.incumbent_path is not None:
                    self.inc_box = self._sandbox("incumbent")
            self._verify_candidate()
        finally:
            self._clean_up()
        for name in ("runtime", "timeout", "memory", "protocol"):
            if self.book.ok(name) and self.results:
                self.book.passed(name)
        if task_fingerprint(self.task) != before:
            self.book.failed("integrity", "task files changed while the candidate ran")
        return self._result()

    def _clean_up(self) -> None:
        """Close every box and remove the scratch folder, on every way out (a signal included).

        Each step runs even when one before it raised: a SIGINT or SIGTERM (`kloop.signals`) that
        lands while the first box closes used to skip the others and the folder, and their dirs
        stayed in TMPDIR. The first error is raised once everything is done.
        """
        pending: BaseException | None = None
        if self.candidate is not None:
            self.phase_ns["sandbox_wait"] = self.candidate.waited_ns
        t0 = time.perf_counter_ns()
        for box in (self.candidate, self.base_box, self.inc_box):
            if box is None:
                continue
            try:
                if box is not self.candidate:  # a trusted box still loading in the background stops here
                    self._join_trusted(box)
                box.close(after_kill=self._publish_build)
                self._keep_log(box)
                late = box.refusals() if box is self.candidate else []
                if late:  # refused after its last reply (a thread, a helper): the box is dead, the list final
                    self.book.failed("sandbox_policy", f"after the last reply: {late[:3]}")
            except BaseException as exc:  # noqa: BLE001 -- finish the clean-up, then raise it
                pending = pending or exc
                box.close()  # safe twice: kills what is left and removes its dir
        self.phase_ns["close"] = time.perf_counter_ns() - t0
        if self.options.log_dir is None:  # nothing of ours outlives the verification (issue 29)
            shutil.rmtree(self.log_dir, ignore_errors=True)
        if pending is not None:
            raise pending
        if self.options.prestart:  # the next candidate's boxes start now, not beside this one's
            shared_pool().refill()

    def _wants_speedup(self) -> bool:
        return self.options.timing and self.options.speedup and self.baseline is not None

    def _sandbox(self, label: str) -> SandboxProcess:
        """A started sandbox: a pre-started spare when `options.prestart`, else a new one."""
        if self.options.prestart:
            box = shared_pool().take(device=self.device, threads=self.options.threads, cache_dir=self.cache_dir,
                                     memory_limit_mb=self.options.memory_limit_mb, label=label)  # fmt: skip
        else:
            box = SandboxProcess(device=self.device, threads=self.options.threads, cache_dir=self.cache_dir,
                                 memory_limit_mb=self.options.memory_limit_mb,
                                 log_path=self.log_dir / f"{label}.log", label=label).start()  # fmt: skip
        self.log_paths[label] = box.log_path
        return box

    def _verify_candidate(self) -> None:
        assert self.candidate is not None
        listed, heldout = self._select_workloads()
        judge = WorkloadJudge(self.task, self.book, self.seed, self.dps)
        try:  # no candidate code has run yet: a sandbox that cannot start is kloop's failure
            self.candidate.wait_ready()
        except SandboxFailure as exc:
            raise HarnessFailure(f"the sandbox did not start ({exc}); see {self.candidate.log_path}") from None
        try:
            if self.options.timing and not self._wants_speedup():  # without a baseline box: measured before load
                from kloop.verify.timed import calibrate

                t0 = time.perf_counter_ns()
                self.overhead = calibrate(self.candidate, judge, listed, self.options.timeout_s)
                self.phase_ns["calibrate"] = time.perf_counter_ns() - t0
            t0 = time.perf_counter_ns()
            if not self._load(self.candidate, self.solution, candidate=True):
                return
            self.phase_ns["load"] = time.perf_counter_ns() - t0
            self._start_trusted_loads()
            judge.dps = self.dps
            for workload, is_heldout in [*((w, False) for w in listed), *((w, True) for w in heldout)]:
                result = judge.judge(self.candidate, workload, is_heldout, self.options.timeout_s)
                self.results.append(result)
                if result.status in (VerifyStatus.RUNTIME_ERROR, VerifyStatus.TIMEOUT, VerifyStatus.REJECTED):
                    break
            if all(r.status is VerifyStatus.PASSED for r in self.results) and self.book.status() is VerifyStatus.PASSED:
                self._cover(judge, listed)
            for name, ns in judge.phase_ns.items():
                self.phase_ns[name] = ns
        except SandboxFailure as exc:
            self._record_failure(exc)
            return
        if self.book.status() is VerifyStatus.PASSED:
            self._time(listed, judge)
        else:
            self._skip_timing("candidate did not pass correctness")

    def _cover(self, judge: WorkloadJudge, listed: list[Workload]) -> None:
        """Input coverage beyond the declared distribution (`kloop.verify.coverage`)."""
        from kloop.verify.coverage import judge_coverage

        assert self.candidate is not None
        t0 = time.perf_counter_ns()
        results, notes = judge_coverage(judge, self.candidate, listed, self.options.timeout_s)
        self.results.extend(results)
        regimes = list(dict.fromkeys(r.uuid.split("-")[2] for r in results))  # heldout-coverage-<regime>-<uuid>
        self.book.note("numeric", "coverage: " + ", ".join(regimes or ["none"]) + (f"; {'; '.join(notes)}" if notes else ""))
        self.phase_ns["coverage"] = time.perf_counter_ns() - t0

    def _select_workloads(self) -> tuple[list[Workload], list[Workload]]:
        from kloop.task.inputs import heldout_workloads

        listed = list(self.task.workloads)
        if self.options.workloads is not None:
            listed = listed[: self.options.workloads]
        spec = self.task.definition.settings.heldout
        count = spec.count if spec is not None and spec.count is not None else self.options.heldout
        heldout = heldout_workloads(self.task.definition, listed, seed=derive_seed(self.seed, "heldout"),
                                    count=count)  # fmt: skip
        if not heldout:
            self.book.skip("heldout", "the definition has no var axes to draw beyond the listed values")
        return listed, heldout

    def _load(self, box: SandboxProcess, solution: Solution, *, candidate: bool) -> bool:
        """Build and import in the sandbox; record build/timing facts. False when it failed."""
        # absolute: the sandbox resolves paths against its own cwd (a relative task path would deny its workdir)
        deny = [str(Path(p).resolve()) for p in (self.task.root, self.task.definition_path, self.task.workloads_path,
                                                 self.task.baseline_path) if p is not None]  # fmt: skip
        timeout = max(self.options.timeout_s, BUILD_TIMEOUT_FLOOR_S) if self.options.build_timeout_s is None \
            else self.options.build_timeout_s
        reply, _ = box.request("build", {"solution": solution.model_dump(mode="json"), "cache_dir": str(self.cache_dir),
                                         "deny": deny}, timeout_s=timeout)  # fmt: skip
        if candidate and reply.get("filesystem"):
            self.book.passed("sandbox_policy", f"{reply['filesystem']}; {box.policy()}")
        if reply.get("ok"):
            self._note_build(box, reply, candidate=candidate)
            reply, _ = box.request("load", {}, timeout_s=timeout)
        if not reply.get("ok"):
            if candidate:
                self.book.failed("build", str(reply.get("error", "build failed"))[:2000])
            return False
        if candidate:
            self.dps = bool(reply.get("destination_passing", True))
            self.timing_meaningful = bool(reply.get("timing_meaningful", True))
            self.book.passed("build", f"{reply.get('language')} solution built (cache {str(reply.get('cache_key'))[:12]})")
            if reply.get("violations"):  # refused calls at import, as the kernel reported them
                self.book.failed("sandbox_policy", f"at import: {reply['violations'][:3]}")
            threads = reply.get("new_threads") or []
            if threads:
                self.book.failed("background_threads", f"threads started at import: {threads}")
        return True

    def _note_build(self, box: SandboxProcess, reply: dict, *, candidate: bool) -> None:
        """Keep a fresh build's manifest for publishing; say when a cache entry failed its hash check."""
        if isinstance(reply.get("manifest"), dict):
            self.staged_builds[box.label] = reply["manifest"]
        if candidate and reply.get("refused"):
            self.book.passed("build", f"cache entry not trusted and rebuilt: {str(reply['refused'])[:200]}")

    def _keep_log(self, box: SandboxProcess) -> None:
        """A pool box's log moves to `--log-dir` (or goes); say when the box's output was capped."""
        capped = box.log.describe()
        if capped is not None and box is self.candidate:
            self.book.passed("runtime", f"candidate {capped}")
        if self.options.log_dir is None:
            self.log_paths.pop(box.label, None)
            if box.log_path.parent != self.log_dir:
                box.log_path.unlink(missing_ok=True)
        elif box.log_path.parent != self.log_dir:
            kept = self.log_dir / f"{box.label}.log"
            with contextlib.suppress(OSError):
                self.log_dir.mkdir(parents=True, exist_ok=True)
                shutil.move(box.log_path, kept)
                self.log_paths[box.label] = kept

    def _publish_build(self, box: SandboxProcess) -> None:
        """After the box is dead: publish its build if its files still hash as reported before its code ran."""
        from kloop.builder.cache import SANDBOX_STAGING, BuildCache

        manifest = self.staged_builds.pop(box.label, None)
        if manifest is None:
            return
        key = str(manifest.get("key", ""))
        why = BuildCache(self.cache_dir).publish(box.workdir / SANDBOX_STAGING / key[:2] / key, manifest)
        if why is not None and "changed after" in why and box is self.candidate:
            self.book.failed("sandbox_policy", f"the candidate's {why}; not published to the build cache")

    def _record_failure(self, exc: SandboxFailure, where: str = "") -> None:
        check = FAILURE_CHECK.get(exc.kind, "runtime")
        prefix = f"{where}: " if where else ""
        self.book.failed(check, f"{prefix}sandbox {exc.detail}")
        self._skip_timing(f"sandbox failed ({exc.kind})")

    # -- timing --------------------------------------------------------------------------------
    def _skip_timing(self, why: str) -> None:
        self.timing_note = why
        for name in ("timed_outputs", "physics_floor", "wall_clock", "off_cpu"):  # every timing-only check
            self.book.skip(name, why)

    timing_note: str | None = None

    def _time(self, listed: list[Workload], judge: WorkloadJudge) -> None:
        from kloop.verify.timed import TimingPlan, TimingSession

        if not self.options.timing:
            self._skip_timing("timing disabled (--no-timing)")
            return
        if not self.timing_meaningful:
            self._skip_timing("timing not meaningful here (e.g. Triton in interpreter mode on CPU)")
            return
        assert self.candidate is not None
        boxes = {"candidate": self.candidate, **self._trusted_boxes()}
        o = self.options
        plan = TimingPlan(device=self.device, rounds=o.rounds, iterations=o.iterations, warmup=o.warmup,
                          recheck=o.recheck, timeout_s=o.timeout_s, seed=self.seed)  # fmt: skip
        session = TimingSession(judge, self.book, boxes, plan, self.overhead)
        t0 = time.perf_counter_ns()
        try:
            self.timing = session.run(listed, self.results)
        except SandboxFailure as exc:
            self._record_failure(exc, where="timing")
        self.phase_ns["timing"] = time.perf_counter_ns() - t0
        note = session.outcome.note
        if note and self.timing_note is None:
            self.timing_note = note

    def _start_trusted_loads(self) -> None:
        """Build and import the baseline and the current best while the candidate's correctness runs.

        Those boxes only wait until timing; loading them after correctness added their build and
        import (about 0.3 s for a Python baseline) to every verification's wall time, while on two
        cores the supervisor and the candidate's box mostly take turns on one. Nothing is timed
        before `_trusted_boxes` joins the load, so no box's timing overlaps it.
        """
        if (self.base_box is None and self.inc_box is None) or not self.timing_meaningful:
            return
        self.trusted_loader = threading.Thread(target=self._load_trusted_boxes, name="kloop-trusted-load", daemon=True)
        self.trusted_loader.start()

    def _load_trusted_boxes(self) -> None:
        loaded: dict[str, SandboxProcess] = {}
        for label, box, solution in (("baseline", self.base_box, self.baseline), ("incumbent", self.inc_box, self._incumbent())):
            if box is None or solution is None:
                continue
            try:
                if self._load_trusted(box, solution, label):
                    loaded[label] = box
            except Exception as exc:  # noqa: BLE001 -- closed under it (clean-up), or kloop's own bug: no comparison
                self.timing_note = self.timing_note or f"{label} did not load ({type(exc).__name__}: {exc}); no speedup over it"
        self.trusted = loaded

    def _trusted_boxes(self) -> dict[str, SandboxProcess]:
        """The trusted boxes that loaded: joins the background load, or loads them now if none ran."""
        if self.trusted_loader is None:
            self._load_trusted_boxes()
        else:
            self.trusted_loader.join()
        return dict(self.trusted or {})

    def _join_trusted(self, box: SandboxProcess) -> None:
        """Wait for a background load that is using `box`, killing the box first if the verification
        ended without timing (its load is no longer wanted; the load then fails and returns)."""
        loader = self.trusted_loader
        if loader is None or not loader.is_alive():
            return
        box.kill()  # its request then fails at once (the channel closes) and the load returns
        loader.join(timeout=30)

    def _incumbent(self) -> Solution | None:
        from kloop.task.load import load_solution

        path = self.options.incumbent_path
        return load_solution(path) if path is not None else None

    def _load_trusted(self, box: SandboxProcess, solution: Solution, label: str) -> bool:
        """Load the baseline or the current best; a failure costs the comparison, never the candidate's verdict."""
        try:
            if self._load(box, solution, candidate=False):
                return True
            why = "failed to build"
        except SandboxFailure as exc:
            why = f"sandbox failed: {exc.detail}"
        self.timing_note = self.timing_note or f"{label} {why}; no speedup over it"
        return False

    # -- verdict -------------------------------------------------------------------------------
    def _result(self) -> VerifyResult:
        from kloop.verify.timed import summarize

        status = worst([self.book.status(), *(r.status for r in self.results)])
        if status is not VerifyStatus.PASSED:  # a refused candidate reports no speedup at all
            for r in self.results:
                r.speedup = r.speedup_ci = r.incumbent_speedup = r.incumbent_speedup_ci = None
            self.timing = None
            self.timing_note = self.timing_note or f"no speedup: verdict is {status.value}"
        summary = summarize(self.results, self.timing_note, self.timing)
        return VerifyResult(
            status=status, reasons=self.book.reasons(), task=self.task.definition.name, solution=self.solution.name,
            device=self.device, checks=self.book.rows(), workloads=self.results, summary=summary,
            environment=environment(self.device, self.options.threads),
            log_path=str(self.log_paths["candidate"]) if "candidate" in self.log_paths else None,
        )


def environment(device: str, threads: int) -> dict[str, str]:
    import platform

    import torch

    import kloop

    env = {"python": platform.python_version(), "torch": torch.__version__, "kloop": getattr(kloop, "__version__", "0"),
           "threads": str(threads), "platform": platform.platform()}  # fmt: skip
    if device == "cuda" and torch.cuda.is_available():
        env["hardware"] = torch.cuda.get_device_name(0)
        env["cuda"] = str(torch.version.cuda)
    else:
        env["hardware"] = platform.processor() or platform.machine()
    from importlib.metadata import PackageNotFoundError, version

    with contextlib.suppress(PackageNotFoundError):  # metadata: importing triton costs ~0.3 s
        env["triton"] = version("triton")
    return env
