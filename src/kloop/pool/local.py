"""The embedded local pool (the default): one slot per GPU, or per CPU set on the CPU.

Each slot is a long-lived `kloop.pool.slot` process pinned to its device (CUDA_VISIBLE_DEVICES /
HIP_VISIBLE_DEVICES) or to its CPU set (sched_setaffinity), fed by a thread that takes jobs from
the shared queue. A slot process that dies mid-job is restarted and the job requeued.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future

from kloop.device.detect import resolve_kind
from kloop.device.schema import DeviceKind
from kloop.pool.base import DEFAULT_MAX_ATTEMPTS, JobQueue, Pending
from kloop.pool.job import JobOutcome, VerifyJob


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def cpu_sets(slots: int) -> list[list[int]]:
    """Split this process's CPUs into `slots` sets; more slots than CPUs share them round-robin."""
    cpus = sorted(os.sched_getaffinity(0))
    size = max(1, len(cpus) // slots)
    return [cpus[(i * size) % len(cpus):(i * size) % len(cpus) + size] for i in range(slots)]


class Slot:
    """One slot: its process, and the thread that feeds it from the queue."""

    def __init__(self, name: str, device: str, env: dict[str, str], cpus: list[int] | None,
                 queue: JobQueue) -> None:
        self.name, self.device, self.env, self.cpus, self.queue = name, device, env, cpus, queue
        self.proc: subprocess.Popen[str] | None = None
        self.busy_with: str | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, name=f"kloop-slot-{name}", daemon=True)
        self.thread.start()

    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-m", "kloop.pool.slot", self.name, self.device],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env={**os.environ, **self.env})
        if self.cpus is not None:
            os.sched_setaffinity(proc.pid, self.cpus)
        assert proc.stdout is not None
        proc.stdout.readline()  # {"ready": true} once imports are done, or "" if it died
        return proc

    def _serve(self) -> None:
        while not self.queue.closed:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = self._start()
                self.ready.set()
            item = self.queue.take(timeout=0.5)
            if item is None:
                continue
            self._run(item)

    def _run(self, item: Pending) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        self.busy_with = item.job.id
        try:
            proc.stdin.write(item.job.model_dump_json() + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        finally:
            self.busy_with = None
        if not line:
            code = proc.wait()
            self.proc = None
            self.queue.requeue(item, f"local slot {self.name} (pid {proc.pid}) died with status {code} mid-job")
            return
        self.queue.done(item, JobOutcome.model_validate(json.loads(line)))

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class LocalPool:
    """Slots on this machine; `slots` defaults to one per GPU, else one per CPU."""

    name = "local"

    def __init__(self, device: str = "auto", slots: int | None = None,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> None:
        kind = resolve_kind(device)
        self.queue = JobQueue(max_attempts)
        self.slots: list[Slot] = []
        if kind is DeviceKind.CPU:
            count = slots or len(os.sched_getaffinity(0))
            for i, cpus in enumerate(cpu_sets(count)):
                self.slots.append(Slot(f"slot{i}", "cpu", {}, cpus, self.queue))
        else:
            count = slots or gpu_count()
            var = "HIP_VISIBLE_DEVICES" if kind is DeviceKind.ROCM else "CUDA_VISIBLE_DEVICES"
            for i in range(count):
                self.slots.append(Slot(f"gpu{i}", kind.value, {var: str(i % max(1, gpu_count()))}, None, self.queue))

    def submit(self, job: VerifyJob) -> Future[JobOutcome]:
        return self.queue.put(job)

    def workers(self) -> list[str]:
        return [s.name for s in self.slots if s.proc is not None and s.proc.poll() is None]

    def busy(self) -> dict[str, int]:
        """{job id: slot process id} for the jobs being verified now (fault tests kill these)."""
        return {s.busy_with: s.proc.pid for s in self.slots if s.busy_with and s.proc is not None}

    def close(self) -> None:
        self.queue.close()
        for slot in self.slots:
            slot.close()
        for slot in self.slots:
            slot.thread.join(timeout=5)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
