"""Correctness of one workload: inputs, float64 reference, two poisoned runs, every output check.

`WorkloadJudge` runs on the supervisor. It stages a workload's inputs in the sandbox, asks for two
runs (destination buffers poisoned with different patterns), and records shape, dtype, exact type,
finite, outputs-written, numeric (or held-out), inputs-unmodified and determinism in the CheckBook.
Input coverage asks for one run per regime (`runs=1`): its point is the values, and the listed and
held-out workloads' two runs already judge writes and determinism at every shape.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from kloop.errors import BadInput
from kloop.task.load import Task
from kloop.task.schema import Tolerance, Workload
from kloop.task.seeds import derive_seed  # re-exported: verify modules import it from here
from kloop.verify.checks import CheckBook
from kloop.verify.process import SandboxProcess
from kloop.verify.result import VerifyStatus, WorkloadResult, worst

# (float pattern, integer pattern) per run; the second run uses the second pattern.
# Exact in every float dtype the harness makes (float8 e4m3fn and e5m2 included: 1.25 * 2^8, -1.75 * 2^7), so a
# poisoned fp8 destination is not an overflow blamed on the candidate.
POISONS: tuple[list[float], list[float]] = ([320.0, -77], [-224.0, -99])


class WorkloadJudge:
    """Holds the definition and reference; judges workloads one at a time."""

    def __init__(self, task: Task, book: CheckBook, seed: int, dps: bool) -> None:
        from kloop.task.reference import load_reference

        self.task = task
        self.definition = task.definition
        self.book = book
        self.seed = seed
        self.dps = dps
        self.reference = load_reference(self.definition)
        self.precision = "native"
        """The precision the last reference outputs were computed in (`reference_outputs`)."""
        self.phase_ns: dict[str, int] = defaultdict(int)
        self.call_ns: dict[str, int] = {}
        """Fastest call per workload uuid as the sandbox timed it: sizes timing batches, decides nothing."""

    # -- supervisor-side data ------------------------------------------------------------------
    def inputs_for(self, workload: Workload) -> tuple[dict[str, Any], dict[str, int]]:
        """CPU inputs (from the secret seed) and the resolved axes of a workload."""
        from kloop.task.inputs import make_inputs
        from kloop.task.shapes import resolve_axes

        t0 = time.perf_counter_ns()
        inputs = make_inputs(self.definition, workload, seed=derive_seed(self.seed, workload.uuid), device="cpu",
                             task_root=self.task.root)  # fmt: skip
        self.phase_ns["inputs"] += time.perf_counter_ns() - t0
        return inputs, resolve_axes(self.definition, workload)

    def reference_outputs(self, inputs: dict[str, Any], axes: dict[str, int], where: str) -> dict[str, Any]:
        """Reference outputs in float64 through the reference's own casts (`kloop.task.precision`).

        Tried in order: float64 forced through the reference's casts, float64 inputs only, the native
        precision; the first that runs and returns the expected shapes wins, and `precision` says which.
        A definition opts out with `kloop.reference_float64: false` (native only).
        """
        t0 = time.perf_counter_ns()
        outs: dict[str, Any] | None = None
        error: Exception | None = None
        for precision in self.precisions():
            try:
                outs = self.reference_in(precision, inputs, axes)
            except Exception as exc:
                error = exc
                continue
            self.precision = precision
            break
        self.phase_ns["reference"] += time.perf_counter_ns() - t0
        if outs is None:
            raise BadInput(f"definition {self.definition.name}", f"reference fails on {where}: {error}")
        return outs

    def precisions(self) -> tuple[str, ...]:
        return ("float64", "float64-inputs", "native") if self.definition.settings.reference_float64 else ("native",)

    def reference_in(self, precision: str, inputs: dict[str, Any], axes: dict[str, int]) -> dict[str, Any]:
        """The reference's outputs computed in `precision` (float64, float64-inputs or native), shapes checked."""
        import torch

        from kloop.task.precision import run_float64, upcast
        from kloop.task.reference import outputs_as_dict

        with torch.no_grad():
            if precision == "float64":
                raw = run_float64(self.reference, inputs)
            else:
                raw = self.reference(*(upcast(inputs) if precision == "float64-inputs" else inputs).values())
        result = outputs_as_dict(self.definition, raw)
        shapes = self.expected_shapes(axes)
        if not all(isinstance(v, torch.Tensor) and tuple(v.shape) == shapes[k] for k, v in result.items()):
            raise ValueError(f"reference returned shapes {[tuple(getattr(v, 'shape', ())) for v in result.values()]}")
        return {k: v.detach().cpu() for k, v in result.items()}

    def expected_shapes(self, axes: dict[str, int]) -> dict[str, tuple[int, ...]]:
        from kloop.task.shapes import tensor_shapes

        shapes = tensor_shapes(self.definition, axes)
        return {name: tuple(shapes[name] or ()) for name in self.definition.outputs}

    def output_specs(self, axes: dict[str, int]) -> list[dict[str, Any]]:
        from kloop.task.inputs import torch_dtype

        shapes = self.expected_shapes(axes)
        return [{"name": n, "shape": list(shapes[n]), "dtype": str(torch_dtype(s.dtype, n)).removeprefix("torch.")}
                for n, s in self.definition.outputs.items()]  # fmt: skip

    def label(self, workload: Workload, axes: dict[str, int]) -> str:
        var = {a: axes[a] for a in self.definition.var_axes if a in axes}
        return f"workload {workload.uuid[:18]} {var}"

    # -- sandbox interaction -------------------------------------------------------------------
    def stage(self, box: SandboxProcess, inputs: dict[str, Any], axes: dict[str, int], timeout_s: float) -> None:
        import torch

        tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        scalars = {k: v for k, v in inputs.items() if not isinstance(v, torch.Tensor)}
        box.request("stage", {"order": list(inputs), "scalars": scalars, "outputs": self.output_specs(axes)},
                    tensors, timeout_s=timeout_s)  # fmt: skip

    def judge(self, box: SandboxProcess, workload: Workload, heldout: bool, timeout_s: float,
              prepared: tuple[dict[str, Any], dict[str, int], dict[str, Any], str] | None = None,
              tolerances: dict[str, Tolerance] | None = None, runs: int = 2) -> WorkloadResult:  # fmt: skip
        """Stage, run `runs` times (1 or 2) with different poisons, and record every correctness check.

        `prepared` = (inputs, axes, reference outputs, label) when the caller made the inputs, and
        `tolerances` per output where it scaled them (input coverage, `kloop.verify.coverage`).
        One run judges values and the elements left holding its poison where the reference is not
        that value; determinism and the two-poison unwritten check need the second.
        """
        from kloop.progress import step

        kind = "held-out workload" if heldout else "workload"
        step(f"{kind} {workload.uuid[:8]}: inputs and reference")
        if prepared is None:
            inputs, axes = self.inputs_for(workload)
            where = self.label(workload, axes)
            ref = self.reference_outputs(inputs, axes, where)
        else:
            inputs, axes, ref, where = prepared
        var_axes = {a: axes[a] for a in self.definition.var_axes if a in axes}
        result = WorkloadResult(uuid=workload.uuid, axes=var_axes, heldout=heldout)
        step(f"{kind} {workload.uuid[:8]} {result.axes}: {'two poisoned runs' if runs == 2 else 'a poisoned run'} and checks")
        self.stage(box, inputs, axes, timeout_s)
        statuses: list[VerifyStatus] = []
        poisons, outputs = POISONS[:runs], []
        t0 = time.perf_counter_ns()
        for poison in poisons:
            start = time.perf_counter_ns()
            reply, tensors = box.request("run", {"poison": poison}, timeout_s=timeout_s)
            wall = time.perf_counter_ns() - start
            outs = self.inspect(reply, tensors, axes, where, statuses)
            if outs is None:
                break
            self.check_inputs(reply.get("inputs_changed", []), where, statuses)
            outputs.append(outs)
            # sizes timing batches only (no verdict rests on it): the sandbox's own time of the call, but never
            # below a twentieth of the round trip we saw (a lying clock would make batches, and waits, huge)
            took = max(int(reply["elapsed_ns"]) if isinstance(reply.get("elapsed_ns"), int) else wall, wall // 20)
            self.call_ns[workload.uuid] = min(self.call_ns.get(workload.uuid, took), max(took, 1))
        self.phase_ns["runs"] += time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        if len(outputs) == len(poisons):
            self.check_values(outputs, ref, where, heldout, statuses, result, tolerances or {})
        self.phase_ns["checks"] += time.perf_counter_ns() - t0
        result.status = worst(statuses)
        return result

    def inspect(self, reply: dict[str, Any], tensors: dict[str, Any], axes: dict[str, int], where: str,
                statuses: list[VerifyStatus]) -> list[Any] | None:  # fmt: skip
        """Runtime, policy, thread, type, count, shape and dtype checks on one reply."""
        book = self.book
        if not reply.get("ok"):
            from kloop.verify.hints import call_signature_hint

            error = str(reply.get("error", "call failed"))
            hint = call_signature_hint(error, self.dps, list(self.definition.inputs), list(self.definition.outputs))
            statuses.append(book.failed("runtime", f"{where}: {error[:500]}" + (f"; {hint}" if hint else "")))
            return None
        self.check_sandbox(reply, where, statuses)
        meta = reply.get("outputs") or []
        specs = self.output_specs(axes)
        if len(meta) != len(specs):
            statuses.append(book.failed("shape", f"{where}: {len(meta)} outputs returned, {len(specs)} expected"))
            return None
        outs = []
        for entry, spec in zip(meta, specs, strict=True):
            name = spec["name"]
            if not entry.get("exact_type"):
                statuses.append(book.failed("exact_type", f"{where}: output {name} is {entry.get('type')}"))
                return None
            if entry.get("shape") != spec["shape"]:
                statuses.append(book.failed("shape", f"{where}: output {name} has shape {entry.get('shape')}, expected {spec['shape']}"))
                return None
            if entry.get("dtype") != spec["dtype"]:
                statuses.append(book.failed("dtype", f"{where}: output {name} is {entry.get('dtype')}, expected {spec['dtype']}"))
                return None
            tensor = tensors.get(str(entry.get("index")))
            if tensor is None or list(tensor.shape) != spec["shape"]:
                statuses.append(book.failed("protocol", f"{where}: output {name} missing from the reply"))
                return None
            outs.append(tensor)
        for name in ("exact_type", "shape", "dtype"):
            book.passed(name)
        return outs

    def check_sandbox(self, reply: dict[str, Any], where: str, statuses: list[VerifyStatus]) -> None:
        if reply.get("violations"):
            statuses.append(self.book.failed("sandbox_policy", f"{where}: {reply['violations'][:3]}"))
        else:
            self.book.passed("sandbox_policy")
        if reply.get("new_threads"):
            statuses.append(self.book.failed("background_threads", f"{where}: still running after return: {reply['new_threads'][:5]}"))
        else:
            self.book.passed("background_threads")

    def check_inputs(self, changed: list[str], where: str, statuses: list[VerifyStatus]) -> None:
        """`changed`: the inputs whose bytes the supervisor found changed after the call (`measure.SharedInputs`)."""
        if changed:
            statuses.append(self.book.failed("inputs_unmodified", f"{where}: inputs {changed} changed by the call"))
        else:
            self.book.passed("inputs_unmodified")

    def check_values(self, runs: list[list[Any]], ref: dict[str, Any], where: str, heldout: bool,
                     statuses: list[VerifyStatus], result: WorkloadResult,
                     tolerances: dict[str, Tolerance]) -> None:  # fmt: skip
        from kloop.task.shapes import comparator_for, tolerance_for
        from kloop.verify.compare import compare, disagreement, left_poisoned, same, unwritten

        book = self.book
        max_abs = max_rel = 0.0
        numeric_check = "heldout" if heldout else "numeric"
        for i, name in enumerate(self.definition.outputs):
            tol, comp = tolerances.get(name) or tolerance_for(self.definition, name), comparator_for(self.definition, name)
            outs = [run[i] for run in runs]
            a, b = outs[0], outs[-1]
            if not self.dps:
                holes = 0
            elif len(outs) == 1:
                holes = left_poisoned(a, ref[name], POISONS[0], tol, comp)
            else:
                holes = unwritten(a, b, POISONS)
            if holes:
                statuses.append(book.failed("outputs_written", f"{where}: {holes}/{a.numel()} elements of {name} never written"))
            else:
                book.passed("outputs_written", "" if self.dps else "value-returning solution: scrubbed memory")
            for run, out in ((f"run {k + 1}", out) for k, out in enumerate(outs)):
                c = compare(out, ref[name], tol, comp)
                max_abs, max_rel = max(max_abs, c.max_abs_error), max(max_rel, c.max_rel_error)
                if not c.finite:
                    statuses.append(book.failed("finite", f"{where} {run}: {name}: {c.detail}"))
                elif not c.numeric:
                    statuses.append(book.failed(numeric_check, f"{where} {run}: {name}: {c.detail}"))
                else:
                    book.passed("finite")
                    book.passed(numeric_check, f"max abs err {max_abs:.3g}")
            if len(outs) == 1:
                continue
            agree, _ = same(a, b, tol)
            if not agree:
                statuses.append(book.failed("determinism", f"{where}: {name} differs between two runs ({disagreement(a, b, tol)})"))
            else:
                book.passed("determinism")
        result.max_abs_error, result.max_rel_error = max_abs, max_rel

    def compare_outputs(self, outs: list[Any], ref: dict[str, Any]) -> tuple[bool, str]:
        """For re-checked timed iterations: all outputs right (type, shape, dtype, values)?"""
        import torch

        from kloop.task.shapes import comparator_for, tolerance_for
        from kloop.verify.compare import compare

        if len(outs) != len(ref):
            return False, f"{len(outs)} outputs, {len(ref)} expected"
        for out, (name, expected) in zip(outs, ref.items(), strict=True):
            if type(out) is not torch.Tensor or out.shape != expected.shape:
                return False, f"output {name} has the wrong type or shape"
            c = compare(out, expected, tolerance_for(self.definition, name), comparator_for(self.definition, name))
            if not c.numeric:
                return False, f"output {name}: {c.detail}"
        return True, ""
