"""The sandbox process: `python -m kloop.verify.sandbox --fd N`, or `main` in a box forked from
`kloop.verify.forkserver` (CPU boxes). Untrusted once the candidate loads.

It answers the supervisor's requests over the channel on fd N, one reply per request, and does
nothing else: `build` (compile, or take a verified cache hit, without importing: the reply's
per-file hashes are taken before any candidate code runs), `load` (import the candidate), `stage` (receive one workload's inputs),
`run` (one call with poisoned destination buffers), `handoff` (one workload's timing slots: a sealed
memfd and the handshake's pipes), `batch` (a timing batch: after the reply, one call per `go` from the
supervisor, each call's inputs written only then; `kloop.verify.handoff`), `batch_report`, `bye`. It never sees the seed, the reference, the task
files or any workload it was not sent. Its stdout/stderr go to a log file nobody parses.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import resource
import select
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.verify import landlock, seccomp
from kloop.verify.channel import Channel, ChannelClosed, ProtocolViolation
from kloop.verify.clocks import make_clock
from kloop.verify.policy import SYSTEM_ROOTS, SandboxPolicy, python_roots


def _limit_memory(limit_mb: int, device: str) -> None:
    """RLIMIT_AS, soft and hard, so the candidate cannot raise it back (CPU only: CUDA reserves VA)."""
    if limit_mb > 0 and device == "cpu":
        limit = limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class Harness:
    """State of one sandbox: the built candidate and the staged workload."""

    def __init__(self, channel: Channel, device: str, workdir: Path) -> None:
        import torch

        self.torch = torch
        self.channel = channel
        self.device = device
        self.workdir = workdir
        self.clock = make_clock(device)  # captured before any candidate code runs
        self.harness_threads = set(threading.enumerate())
        self.fn: Callable[..., Any] | None = None
        self.dps = True
        self.inputs: dict[str, Any] = {}
        self.output_specs: list[dict[str, Any]] = []
        self.policy: SandboxPolicy | None = None
        self.staged: Any = None
        self.shared_views: dict[str, Any] = {}
        """Views of the staged inputs' shared memory (`kloop.verify.measure`)."""
        self.shared_map: Any = None
        self.receiver: Any = None
        """The current workload's timing slots (`kloop.verify.handoff.Receiver`)."""
        self.after_reply: Callable[[], None] | None = None
        self.report: dict[str, Any] = {}

    # -- requests -----------------------------------------------------------------------------
    def build(self, req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Write the sources, arm the policy, compile into the private staging dir or take a verified hit.

        Nothing of the candidate has run yet, so the manifest sent back (per-file sha256 of a fresh
        build) is what the compiler made; the supervisor publishes it once this process is dead.
        """
        from kloop.task.schema import Solution

        solution = Solution.model_validate(req["solution"])
        # the builder writes the sources into its own staging entry (and imports them from there): no second copy
        filesystem = self._arm_policy(req)
        try:
            self.staged = _compile(solution, self.device, Path(req["cache_dir"]), self.workdir)
        except Exception as exc:  # any failure to build is the candidate's compile error
            return {"ok": False, "kind": "compile", "error": _describe(exc), "filesystem": filesystem}, {}
        staged = self.staged
        return {"ok": True, "filesystem": filesystem, "cache_key": staged.key, "cache_hit": staged.hit,
                "manifest": None if staged.hit else staged.manifest, "refused": staged.refused}, {}

    def load(self, req: dict[str, Any], t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Import the built candidate (its import-time code runs here); builds first if not yet built."""
        from kloop.builder.dispatch import load_staged

        filesystem = None
        if self.staged is None:
            reply, _ = self.build(req, t)
            if not reply["ok"]:
                return reply, {}
            filesystem = reply["filesystem"]
        try:
            built = load_staged(self.staged)
        except Exception as exc:  # any failure to import is the candidate's compile error
            return {"ok": False, "kind": "compile", "error": _describe(exc), "filesystem": filesystem}, {}
        self.fn = built.fn
        self.dps = bool(built.destination_passing)
        return {
            "ok": True,
            "language": str(getattr(built.language, "value", built.language)),
            "destination_passing": self.dps,
            "timing_meaningful": bool(getattr(built, "timing_meaningful", True)),
            "cache_key": str(getattr(built, "cache_key", "")),
            "new_threads": self._new_threads(),
            "filesystem": filesystem,
        }, {}

    def stage(self, req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Keep one workload's inputs: a private copy of what the supervisor wrote into the memory it
        shares with the box (the only way they come). Before each call that copy is written back there,
        and the call runs on it; the supervisor then compares that memory with what it staged."""
        from kloop.verify.measure import views

        self.shared_views = {}
        if req.get("shared") is not None:  # the memfd follows the frame (SCM_RIGHTS)
            import socket as _socket

            _msg, fds, _flags, _addr = _socket.recv_fds(self.channel.sock, 16, 4)
            if len(fds) != 1:
                return {"ok": False, "kind": "protocol", "error": f"expected 1 descriptor, got {len(fds)}"}, {}
            self.shared_map, self.shared_views = views(fds[0], req["shared"])
            os.close(fds[0])
        scalars = req.get("scalars", {})
        self.inputs = {name: self.shared_views[name].clone().to(self.device) if name in self.shared_views
                       else scalars[name] for name in req["order"]}  # fmt: skip
        self.output_specs = list(req["outputs"])
        return {"ok": True}, {}

    def run(self, req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        torch = self.torch
        inputs: dict[str, Any] = {}
        for k, v in self.inputs.items():  # fresh copies; on the CPU in the memory the supervisor hashes
            shared = self.shared_views.get(k)
            if shared is not None and self.device == "cpu":
                inputs[k] = shared.copy_(v)
            else:
                inputs[k] = v.clone() if isinstance(v, torch.Tensor) else v
        self._scrub(req["poison"])
        try:
            elapsed, outs = self.clock.time_call(self._call_with(inputs, req["poison"]))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are runtime errors too
            return {"ok": False, "kind": "runtime", "error": _describe(exc)}, {}
        if self.device != "cpu":  # the device inputs as the call left them, for the supervisor to compare
            for k, shared in self.shared_views.items():
                shared.copy_(inputs[k].cpu())
        meta, tensors = self._describe_outputs(outs)
        return {"ok": True, "outputs": meta, "elapsed_ns": elapsed,
                "new_threads": self._new_threads(), "violations": self._violations()}, tensors

    def handoff(self, req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Take one workload's slots (a sealed memfd), the read end of the `go` pipe and the write end
        of the `done` pipe, sent with SCM_RIGHTS.

        The fds follow this request's frame on the channel; the views over the slots are made here,
        before any batch, so a batch's window holds nothing but hand-offs and calls.
        """
        import socket as _socket

        from kloop.verify.handoff import Receiver

        _msg, fds, _flags, _addr = _socket.recv_fds(self.channel.sock, 16, 4)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return {"ok": False, "kind": "protocol", "error": f"expected 3 descriptors, got {len(fds)}"}, {}
        if self.receiver is not None:
            self.receiver.close()
        self.output_specs = list(req.get("outputs", self.output_specs))
        self.receiver = Receiver(req["layout"], list(req["order"]), req.get("scalars", {}), *fds)
        return {"ok": True}, {}

    def batch(self, req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Arm a batch of `count` calls: the reply is the supervisor's cue to start handing calls over.

        The calls run right after the reply has left (`serve` runs `after_reply`), one per `go`;
        the outcome is fetched with `batch_report`.
        """
        count, noop = int(req["count"]), bool(req.get("noop"))
        if self.receiver is None or count > self.receiver.count:
            return {"ok": False, "kind": "protocol", "error": "batch larger than the slots handed over"}, {}
        self.report = {"ok": False, "kind": "protocol", "error": "the batch did not run"}
        self.after_reply = lambda: self._run_batch(count, noop)
        return {"ok": True}, {}

    def batch_report(self, _req: dict[str, Any], _t: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the last batch saw from inside: own times (a cross-check only), misshapen outputs, threads."""
        report, self.report = self.report, {"ok": False, "kind": "protocol", "error": "no batch ran"}
        return {**report, "new_threads": self._new_threads(), "violations": self._violations()}, {}

    def _run_batch(self, count: int, noop: bool) -> None:
        """`read go i; call i; write done i`, `count` times. Nothing else runs between the hand-offs."""
        from kloop.verify.handoff import MSG

        rx = self.receiver
        assert rx is not None and (noop or self.fn is not None)
        read, write, pack, go, done = os.read, os.write, MSG.pack, rx.go, rx.done
        fn, dps, cpu = self.fn, self.dps, self.device == "cpu"
        now = self.clock._now
        times: list[int] = []
        bad: list[int] = []
        gc.disable()  # a collection pass landing in one batch and not another is pure noise
        try:
            for i in range(count):
                msg = read(go, 8)
                if msg != pack(i):
                    self.report = {"ok": False, "kind": "protocol", "error": f"expected go {i}, got {msg!r:.40}"}
                    return
                args, outs = rx.ins[i], rx.outs[i]
                try:
                    if noop:
                        t0 = t1 = 0
                    elif cpu:
                        t0 = now()
                        if dps:
                            fn(*args, *outs)
                        elif not self._into_slot(outs, fn(*args)):
                            bad.append(i)
                        t1 = now()
                    else:
                        t0, t1 = 0, self._device_call(args, outs, bad, i)
                except BaseException as exc:  # SystemExit and KeyboardInterrupt are runtime errors too
                    self.report = {"ok": False, "kind": "runtime", "error": _describe(exc)}
                    write(done, pack(-(i + 1)))
                    return
                times.append(t1 - t0)
                write(done, pack(i))
        except OSError as exc:
            self.report = {"ok": False, "kind": "protocol", "error": f"handshake: {exc}"}
            return
        finally:
            gc.enable()
        self.report = {"ok": True, "times_ns": times, "bad": bad}

    def _into_slot(self, outs: list[Any], result: Any) -> bool:
        """Copy a value-returning call's outputs into its slot (part of that call's cost)."""
        torch = self.torch
        if isinstance(result, torch.Tensor) or not isinstance(result, list | tuple):
            result = [result]
        if len(result) != len(outs):
            return False
        for slot, out in zip(outs, result, strict=True):
            if type(out) is not torch.Tensor or out.shape != slot.shape or out.dtype != slot.dtype:
                return False
            slot.copy_(out)
        return True

    def _device_call(self, args: list[Any], outs: list[Any], bad: list[int], index: int) -> int:
        """On a GPU: inputs to the device, the call timed by the captured events, outputs back."""
        torch = self.torch
        dev = [a.to(self.device) if isinstance(a, torch.Tensor) else a for a in args]
        if self.dps:
            dev_outs = [o.to(self.device) for o in outs]
            elapsed, _ = self.clock.time_call(lambda: self.fn(*dev, *dev_outs))  # type: ignore[misc]
            result: Any = dev_outs
        else:
            elapsed, result = self.clock.time_call(lambda: self.fn(*dev))  # type: ignore[misc]
        if not self._into_slot(outs, result):
            bad.append(index)
        return elapsed

    # -- helpers ------------------------------------------------------------------------------
    def _call_with(self, inputs: dict[str, Any], poison: list[float]) -> Callable[[], Any]:
        fn = self.fn
        assert fn is not None
        args = list(inputs.values())
        if not self.dps:
            return lambda: fn(*args)
        outs = [self._poisoned(spec, poison) for spec in self.output_specs]

        def call() -> Any:
            fn(*args, *outs)
            return outs

        return call

    def _poisoned(self, spec: dict[str, Any], poison: list[float]) -> Any:
        torch = self.torch
        dtype = getattr(torch, spec["dtype"])
        value: Any = poison[0] if dtype.is_floating_point else int(poison[1])
        if dtype == torch.bool:
            value = poison[1] % 2 == 1
        return torch.full(spec["shape"], value, dtype=dtype, device=self.device)

    def _scrub(self, poison: list[float]) -> None:
        """Fill and free output-sized buffers so memory a candidate reuses holds poison, not answers."""
        total = sum(int(_numel(s["shape"])) for s in self.output_specs)
        if total:
            junk = self.torch.full((2 * total,), float(poison[0]), device=self.device)
            del junk

    def _describe_outputs(self, outs: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        torch = self.torch
        if isinstance(outs, torch.Tensor) or not isinstance(outs, list | tuple):
            outs = [outs]
        meta: list[dict[str, Any]] = []
        tensors: dict[str, Any] = {}
        for i, out in enumerate(outs):
            entry: dict[str, Any] = {"index": i, "type": f"{type(out).__module__}.{type(out).__qualname__}",
                                     "exact_type": type(out) is torch.Tensor}
            if entry["exact_type"] and (out.is_meta or out.layout != torch.strided or out.device.type not in ("cpu", "cuda")):
                entry.update(exact_type=False, type=f"torch.Tensor on {out.device} with layout {out.layout} (no data)")
            if entry["exact_type"]:
                entry.update(dtype=str(out.dtype).removeprefix("torch."), shape=list(out.shape))
                try:
                    tensors[str(i)] = out
                except Exception as exc:
                    entry["error"] = _describe(exc)
            meta.append(entry)
        return meta, tensors

    def _new_threads(self) -> list[str]:
        return [t.name for t in threading.enumerate() if t not in self.harness_threads and t.is_alive()]

    def _violations(self) -> list[str]:
        return list(self.policy.violations) if self.policy else []

    def _arm_policy(self, req: dict[str, Any]) -> str:
        """Audit hook (readable refusals) plus, where the kernel has it, a Landlock ruleset (no bypass)."""
        writable, cache = [str(self.workdir)], req["cache_dir"]  # the shared build cache: read only
        allow = [*python_roots(), *SYSTEM_ROOTS, *writable, cache, *req.get("allow", [])]
        deny, read = list(req.get("deny", [])), [*allow, *_runtime_roots()]
        self.policy = SandboxPolicy(allow=allow, deny=deny, read_only=[cache])
        self.policy.install()
        abi = landlock.restrict(read=read, write=[*writable, "/dev"], deny=deny)
        return f"filesystem: landlock abi {abi}" if abi else "filesystem: audit hook only"


def _runtime_roots() -> list[str]:
    """What the native runtime reads besides the Python roots: /proc, the compilers, LD_LIBRARY_PATH."""
    roots = ["/proc"]
    for var in ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    roots.extend(p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if os.path.isabs(p))
    for tool in (os.environ.get("CC"), os.environ.get("CXX"), "cc", "c++", "gcc", "g++", "nvcc", "hipcc"):
        found = shutil.which(tool) if tool else None
        if found:  # the toolchain's prefix (/usr/local/cuda for .../bin/nvcc): headers and libs live there
            roots.append(os.path.dirname(os.path.dirname(os.path.realpath(found))))
    return roots


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + "..."


def _compile(solution: Any, device: str, cache_dir: Path, workdir: Path) -> Any:
    from kloop.builder.cache import SANDBOX_STAGING
    from kloop.builder.dispatch import compile_solution

    return compile_solution(solution, device=device, cache_dir=cache_dir, staging_dir=workdir / SANDBOX_STAGING)


FIRST_REQUESTS_IMPORT = ("kloop.task.schema", "kloop.builder.cache", "kloop.builder.dispatch", "kloop.device.detect",
                         "psutil", "kloop.verify.measure", "kloop.verify.handoff")  # fmt: skip
"""What `build`, `stage` and `handoff` import on their first call: the builder's chain reaches
pydantic's models. A box that gets no request within `IDLE_BEFORE_WARMING_S` of its hello (a
spare) imports them then, while it waits for its candidate: both boxes' `build` requests of an
examples/rmsnorm verification took 0.65 s with these imports inside them, 0.05 s without. A request
already waiting at that moment is answered first (a fresh box's supervisor usually sends `build`
later than that, so a fresh box still pays for the imports before its `build`: same total).
No candidate code has run yet, and these start no thread (the box's threads are counted at the hello)."""
IDLE_BEFORE_WARMING_S = 0.05


def warm_imports() -> None:
    """Import what a box's first requests need (also done once by the fork server, before any fork)."""
    for name in FIRST_REQUESTS_IMPORT:
        with contextlib.suppress(Exception):  # the request that needs it reports the failure
            importlib.import_module(name)


def serve(channel: Channel, harness: Harness) -> int:
    """Answer requests until `bye` or the channel closes; every reply echoes the request's nonce."""
    handlers = {"build": harness.build, "load": harness.load, "stage": harness.stage, "run": harness.run,
                "handoff": harness.handoff, "batch": harness.batch, "batch_report": harness.batch_report}  # fmt: skip
    while True:
        try:
            req, tensors = channel.recv()
        except ChannelClosed:
            return 0
        op = req.get("op")
        if op == "bye":
            channel.send({"nonce": req.get("nonce"), "op": "bye", "ok": True})
            return 0
        handler = handlers.get(str(op))
        if handler is None:
            reply, out = {"ok": False, "kind": "protocol", "error": f"unknown op {op!r}"}, {}
        else:
            try:
                reply, out = handler(req, tensors)
            except Exception as exc:
                traceback.print_exc()
                reply, out = {"ok": False, "kind": "runtime", "error": _describe(exc)}, {}
        try:
            channel.send({**reply, "nonce": req.get("nonce"), "op": op}, out)
        except (ProtocolViolation, RuntimeError, TypeError) as exc:  # outputs that cannot become bytes
            channel.send({"ok": False, "kind": "runtime", "error": _describe(exc), "nonce": req.get("nonce"), "op": op})
        run_next, harness.after_reply = harness.after_reply, None
        if run_next is not None:  # a timing batch: its calls are handed over one by one, after this reply
            run_next()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kloop.verify.sandbox")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory-mb", type=int, default=0)
    args = parser.parse_args(argv)
    # before torch and the candidate: the filter binds every thread and child after it, and its
    # listener leaves for the supervisor at once (nothing here can read or swallow what it reports)
    _text, listener = seccomp.apply()
    channel = Channel.from_fd(args.fd)
    seccomp.hand_over(channel.sock, listener)
    _limit_memory(args.memory_mb, args.device)
    import torch

    torch.set_num_threads(max(1, args.threads))
    harness = Harness(channel, args.device, Path.cwd())
    channel.send({"op": "hello", "pid": os.getpid(), "time": time.time(), "torch": torch.__version__})
    if not select.select([channel.sock], [], [], IDLE_BEFORE_WARMING_S)[0]:  # a spare: nobody is waiting on it yet
        warm_imports()
    return serve(channel, harness)


if __name__ == "__main__":
    sys.exit(main())
