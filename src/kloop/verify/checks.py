"""The named checks and what failing each one means for the verdict.

`CheckBook` collects per-workload observations; each check is reported once, aggregated over
workloads, passing only if every workload passed it. A failure's status comes from `CHECKS`, so a
reason always names the check that caught the candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kloop.verify.result import Check, VerifyStatus, worst

S = VerifyStatus
# name -> (status when it fails, what it guards). Order is the order of the report.
CHECKS: dict[str, tuple[VerifyStatus, str]] = {
    "integrity": (S.REJECTED, "sealed task and baseline files hash as expected, before and after"),
    "build": (S.COMPILE_ERROR, "the candidate builds and imports in a fresh sandbox"),
    "runtime": (S.RUNTIME_ERROR, "every call returns; the sandbox neither crashes nor exits"),
    "timeout": (S.TIMEOUT, "every request is answered within the time limit"),
    "memory": (S.RUNTIME_ERROR, "the sandbox stays under its memory limit"),
    "protocol": (S.REJECTED, "the channel carries exactly the replies the supervisor asked for"),
    "sandbox_policy": (S.REJECTED, "no task files, other processes or paths outside the sandbox touched"),
    "background_threads": (S.REJECTED, "no thread or process the candidate started works after a call returns (idle ones may stay)"),
    "exact_type": (S.REJECTED, "outputs are plain torch.Tensor (no subclass, lazy or fake tensor)"),
    "shape": (S.INCORRECT_SHAPE, "output count and shapes match the definition"),
    "dtype": (S.INCORRECT_DTYPE, "output dtypes match the definition"),
    "finite": (S.INCORRECT_NUMERICAL, "no NaN/Inf where the reference is finite"),
    "outputs_written": (S.INCORRECT_NUMERICAL, "every destination element written (two poison patterns)"),
    "numeric": (S.INCORRECT_NUMERICAL, "|out-ref| <= atol + rtol*|ref| against a float64 reference"),
    "inputs_unmodified": (S.REJECTED, "inputs hash the same after the call"),
    "determinism": (S.INCORRECT_NUMERICAL, "two runs on the same inputs agree"),
    "heldout": (S.INCORRECT_NUMERICAL, "correct on var-axis values beyond the listed workloads"),
    "timed_outputs": (S.REJECTED, "fresh inputs every timed iteration; sampled timed outputs re-checked"),
    "physics_floor": (S.REJECTED, "latency no lower than min bytes / peak bandwidth and FLOPs / peak rate"),
    "wall_clock": (S.REJECTED, "the supervisor's wall clock agrees with the sandbox's timings"),
    "off_cpu": (S.REJECTED, "no more time off the CPU per call than the baseline (sleep, I/O, locks go unseen by CPU time)"),
}


@dataclass
class _Entry:
    ran: bool = False
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class CheckBook:
    """Observations by check name; renders `Check` rows, reasons and the overall status."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {name: _Entry() for name in CHECKS}
        self._skipped: dict[str, str] = {}

    def passed(self, name: str, note: str = "") -> None:
        entry = self._entries[name]
        entry.ran = True
        if note and note not in entry.notes:
            entry.notes.append(note)

    def note(self, name: str, text: str) -> None:
        """A note shown first in the check's detail when it passes (what it covered, what it skipped)."""
        entry = self._entries[name]
        entry.ran = True
        entry.notes.insert(0, text)

    def failed(self, name: str, detail: str) -> VerifyStatus:
        """Record a failure; returns the status it implies."""
        entry = self._entries[name]
        entry.ran = True
        entry.failures.append(detail)
        return CHECKS[name][0]

    def merge(self, other: CheckBook) -> None:
        """Add what `other` observed (a regime judged aside, `kloop.verify.coverage`) to this book."""
        for name, theirs in other._entries.items():
            mine = self._entries[name]
            mine.ran = mine.ran or theirs.ran
            mine.failures.extend(theirs.failures)
            mine.notes.extend(n for n in theirs.notes if n not in mine.notes)
        for name, why in other._skipped.items():
            self.skip(name, why)

    def failed_only(self, names: frozenset[str]) -> bool:
        """Whether every failure so far is one of `names` (and there is at least one)."""
        failed = {n for n, e in self._entries.items() if e.failures}
        return bool(failed) and failed <= names

    def skip(self, name: str, why: str) -> None:
        if not self._entries[name].ran:
            self._skipped.setdefault(name, why)

    def ok(self, name: str) -> bool:
        return not self._entries[name].failures

    def status(self) -> VerifyStatus:
        return worst([CHECKS[n][0] for n, e in self._entries.items() if e.failures])

    def reasons(self) -> list[str]:
        out = []
        for name, entry in self._entries.items():
            for detail in entry.failures[:3]:
                out.append(f"{name}: {detail}")
            if len(entry.failures) > 3:
                out.append(f"{name}: ... and {len(entry.failures) - 3} more")
        return out

    def rows(self) -> list[Check]:
        rows = []
        for name, entry in self._entries.items():
            if entry.failures:
                rows.append(Check(name=name, passed=False, detail=entry.failures[0]))
            elif entry.ran:
                rows.append(Check(name=name, passed=True, detail="; ".join(entry.notes[:2])))
            else:
                why = self._skipped.get(name, "not reached")
                rows.append(Check(name=name, passed=True, detail=f"skipped: {why}"))
        return rows
