"""The Ray pool: one actor per device on an existing Ray cluster, each hosting a kloop supervisor.

An actor asks for `num_gpus=1` on GPU nodes, or one unit of the custom resource `kloop_slot` on
CPU nodes (`ray start --resources '{"kloop_slot": 2}'`), so the cluster's resources decide how
many run. A dispatcher thread keeps one actor per free device: an actor whose node dies is
dropped and its job requeued (never a rejection); when the node (or a new one) comes back, the
resource reappears and a new actor is placed there. Needs the `cluster` extra (`pip install
'kloop[cluster]'`) and the same kloop on every node.

The task bundle is the same in every job of a run and can be large (workload files): the driver
serializes and `ray.put`s it once per digest and sends each job without it, so per job the driver
serializes only the candidate (a 32 MiB task cost 0.39 s of driver time per job before, which at
three jobs a second is more than one thread has). Each node pulls the task object once; each actor
parses it once and keeps it by digest. The worker still checks the files against the digest before
it uses them (`Bundle.cached` / `Bundle.decoded`), so nothing about the trust rule changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from kloop.errors import BadInput, HarnessFailure
from kloop.pool.base import DEFAULT_MAX_ATTEMPTS, JobQueue, Pending
from kloop.pool.bundle import Bundle
from kloop.pool.job import JobOutcome, OutcomeKind, VerifyJob

CPU_RESOURCE = "kloop_slot"
TASKS_KEPT = 4
"""Parsed task bundles an actor keeps (a bench run alternates a few tasks; a loop run has one)."""


class VerifierActor:
    """Runs on a cluster node; `verify` is `run_job` there, sandbox and all."""

    def __init__(self, name: str, device: str) -> None:
        self.name, self.device = name, device
        self._tasks: dict[str, Bundle] = {}

    def _who(self) -> Any:
        """This actor as a result names it: actor name, Ray node id, host, pid and device."""
        import ray

        from kloop.pool.job import identity

        return identity("ray", self.name, self.device, ray.get_runtime_context().get_node_id()[:12])

    def identity(self) -> dict[str, Any]:
        return self._who().model_dump()

    def _task(self, digest: str, refs: list[Any]) -> Bundle:
        """The task bundle named `digest`: parsed from its object once, then kept (the worker's
        `run_job` checks its files against the digest before using them, every job)."""
        if digest not in self._tasks:
            import ray

            bundle = Bundle.model_validate_json(ray.get(refs[0]))
            if bundle.digest != digest:
                raise HarnessFailure(f"task object {digest[:12]} holds bundle {bundle.digest[:12]}")
            while len(self._tasks) >= TASKS_KEPT:
                self._tasks.pop(next(iter(self._tasks)))
            self._tasks[digest] = bundle
        return self._tasks[digest]

    def verify(self, job_json: str, task_digest: str | None = None, task_ref: list[Any] | None = None) -> str:
        """One job: the whole job as JSON, or (from `RayPool`) the job less its task, plus the task's
        digest and its object reference in a list (a nested reference is fetched only when needed)."""
        from kloop.pool.job import run_job

        data = json.loads(job_json)
        try:
            if task_digest is not None:
                data["task"] = self._task(task_digest, task_ref or [])
            job = VerifyJob.model_validate(data)
            outcome = run_job(job, self._who())
        except Exception as exc:  # kloop's failure on this worker: said, never a verdict
            outcome = JobOutcome(id=str(data.get("id")), kind=OutcomeKind.harness,
                                 error=f"{type(exc).__name__}: {exc}")
        return outcome.model_dump_json()


@dataclass
class _Actor:
    name: str
    handle: Any
    ping: Any
    ready: bool = False
    busy: Pending | None = None
    ref: Any = None


class RayPool:
    """Actors on a Ray cluster: `auto` (RAY_ADDRESS or the local one) or `ray://ADDRESS`."""

    name = "ray"

    def __init__(self, address: str = "auto", device: str = "auto", max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                 poll_s: float = 0.5) -> None:
        try:
            import ray
        except ImportError:
            raise BadInput("--cluster", "Ray is not installed: pip install 'kloop[cluster]'") from None
        self.ray = ray
        if not ray.is_initialized():
            target = os.environ.get("RAY_ADDRESS", "auto") if address == "auto" else address
            try:
                ray.init(address=target, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise BadInput("--cluster", f"no Ray cluster at {target}: {exc}") from None
        gpus = ray.cluster_resources().get("GPU")
        self.device = ("cuda" if gpus else "cpu") if device == "auto" else ("cuda" if device == "gpu" else device)
        self.queue = JobQueue(max_attempts)
        self.poll_s = poll_s
        self.actors: list[_Actor] = []
        self._counter = 0
        self.task_objects: dict[str, Any] = {}
        """Task bundle digest -> the object reference `ray.put` gave it (one put per task per pool)."""
        self._remote = ray.remote(VerifierActor)
        self._thread = threading.Thread(target=self._dispatch, name="kloop-ray-pool", daemon=True)
        self._thread.start()

    # -- actors ------------------------------------------------------------------------------
    def _resource(self) -> tuple[str, float]:
        if self.device == "cpu":
            return CPU_RESOURCE, self.ray.available_resources().get(CPU_RESOURCE, 0.0)
        return "GPU", self.ray.available_resources().get("GPU", 0.0)

    def _top_up(self) -> None:
        """One actor per free device: pending actors wait for a node with the resource."""
        name, free = self._resource()
        pending = sum(1 for a in self.actors if not a.ready)
        for _ in range(int(free) - pending):
            self._counter += 1
            opts: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0, "num_cpus": 0}
            opts.update({"num_gpus": 1} if name == "GPU" else {"resources": {CPU_RESOURCE: 1}})
            actor_name = f"actor{self._counter}"
            handle = self._remote.options(**opts).remote(actor_name, self.device)
            self.actors.append(_Actor(actor_name, handle, handle.identity.remote()))

    def _drop(self, actor: _Actor, why: str) -> None:
        self.actors.remove(actor)
        if actor.busy is not None:
            self.queue.requeue(actor.busy, why)
        with contextlib.suppress(Exception):  # already gone with its node
            self.ray.kill(actor.handle, no_restart=True)

    # -- the dispatcher ----------------------------------------------------------------------
    def _dispatch(self) -> None:
        last_top_up = 0.0
        while not self.queue.closed:
            if time.monotonic() - last_top_up > 1.0:
                self._top_up()
                last_top_up = time.monotonic()
            for actor in self.actors:
                if actor.ready and actor.busy is None:
                    item = self.queue.take(timeout=0)
                    if item is None:
                        break
                    actor.busy, actor.ref = item, self._send(actor, item.job)
            self._collect()

    def _send(self, actor: _Actor, job: VerifyJob) -> Any:
        """Call the actor with the job less its task, and the task as a shared object put once."""
        digest = job.task.digest
        if digest not in self.task_objects:
            self.task_objects[digest] = self.ray.put(job.task.model_dump_json())
        return actor.handle.verify.remote(job.model_dump_json(exclude={"task"}), digest, [self.task_objects[digest]])

    def _collect(self) -> None:
        refs = {a.ping: a for a in self.actors if not a.ready}
        refs.update({a.ref: a for a in self.actors if a.busy is not None})
        if not refs:
            time.sleep(self.poll_s)
            return
        done, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=self.poll_s)
        for ref in done:
            actor = refs[ref]
            try:
                value = self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:  # the actor, its worker or its node is gone
                self._drop(actor, f"ray {actor.name} lost: {type(exc).__name__}")
                continue
            if ref is actor.ping:
                actor.ready = True
                continue
            item, actor.busy, actor.ref = actor.busy, None, None
            if item is not None:
                self.queue.done(item, JobOutcome.model_validate_json(value))

    # -- the pool interface ------------------------------------------------------------------
    def submit(self, job: VerifyJob) -> Future[JobOutcome]:
        return self.queue.put(job)

    def workers(self) -> list[str]:
        return [a.name for a in self.actors if a.ready]

    def busy(self) -> dict[str, str]:
        """{job id: actor name} for the jobs being verified now."""
        return {a.busy.job.id: a.name for a in self.actors if a.busy is not None}

    def close(self) -> None:
        self.queue.close()
        self._thread.join(timeout=10)
        for actor in list(self.actors):
            if actor.busy is not None and not actor.busy.future.done():
                actor.busy.future.set_result(JobOutcome(id=actor.busy.job.id, kind=OutcomeKind.harness,
                                                        error="the pool closed mid-job"))
            actor.busy = None
            self._drop(actor, "closed")
        self.task_objects.clear()  # the driver's references: the objects go with them

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
