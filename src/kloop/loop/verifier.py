"""The loop's seam to the trust boundary: a `Verifier` object passed into the campaign.

`KloopVerifier` calls the real `kloop.verify.verify` on the sealed task. `FakeVerifier` is a
deterministic stand-in that kloop ships for unit tests of the gate, lineage and workspace: it
reads the verdict a test put in the candidate's `FAKE_VERDICT.json`. End-to-end tests and real
runs use `KloopVerifier`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Protocol

from kloop.errors import BadInput
from kloop.verify.result import Comparison, Summary, VerifyResult, VerifyStatus, WorkloadResult
from kloop.verify.stats import LogRatio

FAKE_VERDICT_FILE = "FAKE_VERDICT.json"


class Verifier(Protocol):
    """Judges one candidate solution directory against the sealed task.

    `incumbent`: the current best's solution directory, timed in the same rounds as the candidate
    so the gate can compare the two directly (None while the best is the baseline). `rounds_factor`
    multiplies the timing rounds (a confirming look's verifications, `SpeedRule.confirm_rounds_factor`).
    """

    def verify(
        self, task_dir: Path, solution_dir: Path, manifest: dict[str, str], log_dir: Path, timing: bool = True,
        incumbent: Path | None = None, rounds_factor: int = 1,
    ) -> VerifyResult: ...


class KloopVerifier:
    """The real verifier: supervisor + sandbox, fresh secret seed per call."""

    def __init__(self, device: str = "auto", overrides: dict[str, Any] | None = None) -> None:
        self.device = device
        self.overrides = dict(overrides or {})

    def verify(
        self, task_dir: Path, solution_dir: Path, manifest: dict[str, str], log_dir: Path, timing: bool = True,
        incumbent: Path | None = None, rounds_factor: int = 1,
    ) -> VerifyResult:
        from kloop.task.load import load_task
        from kloop.verify import verify
        from kloop.verify.result import VerifyOptions

        task = load_task(task_dir)
        options = VerifyOptions.model_validate(
            {"device": self.device, "expected_manifest": manifest or None, "log_dir": log_dir, **self.overrides,
             **({"incumbent_path": incumbent} if incumbent is not None and timing else {}),
             **({"rounds": rounds_factor * int(self.overrides.get("rounds", VerifyOptions().rounds))}
                if rounds_factor > 1 else {}),
             **({} if timing else {"timing": False, "speedup": False})}
        )
        try:
            return verify(task, solution_dir, options)
        except BadInput as exc:  # a candidate too malformed to load is the candidate's failure
            return failed_result(task.name, VerifyStatus.COMPILE_ERROR, f"load: {exc}")


def failed_result(task: str, status: VerifyStatus, reason: str) -> VerifyResult:
    return VerifyResult(status=status, reasons=[reason], task=task, solution="candidate", device="none")


class FakeVerifier:
    """Deterministic verdicts for unit tests: `FAKE_VERDICT.json` = {"status", "speedup", "ci", "log_se"}.

    A missing file means PASSED at 1.0x with CI [0.95, 1.05]. With `log_se` the verdict also
    carries the paired comparison the gate's speed rule reads: that se as given, the replicates of
    16 rounds times `rounds_factor`, so a test can drive the confirming look. Never used by `kloop run`.
    """

    def __init__(self) -> None:
        self.calls: list[Path] = []
        self.rounds_factors: list[int] = []
        self.log_dirs: list[Path] = []

    def verify(
        self, task_dir: Path, solution_dir: Path, manifest: dict[str, str], log_dir: Path, timing: bool = True,
        incumbent: Path | None = None, rounds_factor: int = 1,
    ) -> VerifyResult:
        self.calls.append(solution_dir)
        self.rounds_factors.append(rounds_factor)
        self.log_dirs.append(log_dir)
        path = solution_dir / FAKE_VERDICT_FILE
        data = json.loads(path.read_text()) if path.is_file() else {}
        status = VerifyStatus(data.get("status", "PASSED"))
        speedup = float(data.get("speedup", 1.0))
        ci = data.get("ci") or [speedup * 0.95, speedup * 1.05]
        if status is not VerifyStatus.PASSED:
            return failed_result("fake", status, data.get("reason", "fake: failed"))
        workload = WorkloadResult(uuid="w0", axes={"n": 8}, speedup=speedup, speedup_ci=ci,
                                  latency_ms=1.0 / speedup, baseline_latency_ms=1.0)
        comparison = None
        if "log_se" in data:
            rounds = 16 * rounds_factor
            ratio = LogRatio(math.log(speedup), float(data["log_se"]), rounds - 1, rounds)
            comparison = Comparison.of(ratio)
        return VerifyResult(status=status, task="fake", solution="candidate", device="cpu",
                            workloads=[workload],
                            summary=Summary(speedup_geomean=speedup, speedup_ci=ci, latency_ms_median=1.0 / speedup,
                                            comparison=comparison))  # fmt: skip

