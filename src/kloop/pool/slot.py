"""A local pool slot: one long-lived process that verifies the jobs its pool sends it.

Protocol: one `VerifyJob` JSON per line on stdin, one `JobOutcome` JSON per line on a pipe the
pool owns (the original stdout; everything else this process prints goes to stderr, so nothing
a verifier or a candidate writes is read as an outcome). The process dies with the pool thread
that started it (PR_SET_PDEATHSIG), and the sandboxes it starts die with it.

    python -m kloop.pool.slot SLOT_NAME DEVICE
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the pool closes slots itself
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def main(argv: list[str]) -> int:
    from kloop.pool.job import JobOutcome, OutcomeKind, VerifyJob, identity, run_job

    slot, device = argv[0], argv[1]
    _die_with_parent()
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel.write('{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        job = VerifyJob.model_validate_json(line)
        try:
            outcome = run_job(job, identity("local", slot, device))
        except Exception as exc:  # kloop's failure on this slot: said, never a verdict
            outcome = JobOutcome(id=job.id, kind=OutcomeKind.harness, error=f"{type(exc).__name__}: {exc}")
        channel.write(outcome.model_dump_json() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
