"""The verification pool: one interface, a local implementation and a Ray one.

A pool takes `VerifyJob`s and hands back `JobOutcome`s through futures. A worker that dies
while it holds a job (a killed slot process, a lost Ray node) costs the job nothing: it goes
back to the front of the queue and the next free worker takes it; only after `max_attempts`
lost workers does the pool give up, and then as kloop's failure (exit 3), never as a rejected
candidate.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

from kloop.errors import BadInput
from kloop.pool.job import JobOutcome, OutcomeKind, VerifyJob

DEFAULT_MAX_ATTEMPTS = 3


class VerificationPool(Protocol):
    """Verifies jobs on its workers; thread-safe, so team branches share one."""

    name: str

    def submit(self, job: VerifyJob) -> Future[JobOutcome]: ...

    def workers(self) -> list[str]:
        """The workers ready now, as labels."""
        ...

    def close(self) -> None: ...


@dataclass
class Pending:
    """A job waiting for a worker, with the workers it has lost so far."""

    job: VerifyJob
    future: Future[JobOutcome]
    lost: list[str] = field(default_factory=list)


class JobQueue:
    """The pool's queue: FIFO for new jobs, front of the line for requeued ones."""

    def __init__(self, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> None:
        self.max_attempts = max_attempts
        self._items: deque[Pending] = deque()
        self._cond = threading.Condition()
        self.closed = False

    def put(self, job: VerifyJob) -> Future[JobOutcome]:
        future: Future[JobOutcome] = Future()
        with self._cond:
            if self.closed:
                raise RuntimeError("the pool is closed")
            self._items.append(Pending(job, future))
            self._cond.notify()
        return future

    def take(self, timeout: float | None = None) -> Pending | None:
        with self._cond:
            if not self._items and not self.closed:
                self._cond.wait(timeout)
            return self._items.popleft() if self._items else None

    def requeue(self, item: Pending, why: str) -> None:
        """A worker died holding `item`: retry it first, or fail it as kloop's failure after too many."""
        item.lost.append(why)
        if len(item.lost) >= self.max_attempts or self.closed:
            item.future.set_result(JobOutcome(
                id=item.job.id, kind=OutcomeKind.harness, attempts=len(item.lost), lost=item.lost,
                error=f"{len(item.lost)} workers were lost while verifying it: {'; '.join(item.lost)}"))
            return
        with self._cond:
            self._items.appendleft(item)
            self._cond.notify()

    def done(self, item: Pending, outcome: JobOutcome) -> None:
        item.future.set_result(outcome.model_copy(update={"attempts": len(item.lost) + 1, "lost": item.lost}))

    def close(self) -> None:
        with self._cond:
            self.closed = True
            left = list(self._items)
            self._items.clear()
            self._cond.notify_all()
        for item in left:
            if not item.future.done():
                item.future.set_result(JobOutcome(id=item.job.id, kind=OutcomeKind.harness,
                                                  error="the pool closed before a worker took the job"))


def run_all(pool: VerificationPool, jobs: Iterable[VerifyJob],
            on_done: Callable[[JobOutcome], None] | None = None) -> list[JobOutcome]:
    """Submit every job, call `on_done` as each finishes, return the outcomes in job order."""
    futures = [pool.submit(job) for job in jobs]
    if on_done is not None:
        lock = threading.Lock()

        def report(fut: Future[JobOutcome]) -> None:
            with lock:
                on_done(fut.result())

        for fut in futures:
            fut.add_done_callback(report)
    return [fut.result() for fut in futures]


def check_cluster(cluster: str) -> str:
    """`--cluster` as given when it names a pool kind (no Ray import: for option parsing)."""
    if cluster in ("local", "auto") or (cluster.startswith("ray://") and len(cluster) > len("ray://")):
        return cluster
    raise BadInput("--cluster", f"unknown cluster {cluster!r} (local, auto or ray://ADDRESS)")
