"""Import a KernelBench problem (`Model`, `get_inputs`, `get_init_inputs`) as a kloop task.

Sizes first: the problem's module-level sizes can be shrunk (`--scale`, `--max-bytes`), and its
memory is estimated on the meta device (no allocation) before anything real runs, so a problem
that cannot fit the verifier's sandbox is refused in one line that names a scale that fits.
Then the problem runs once on the CPU under a fixed seed to learn shapes and dtypes. An input's
axes are named after the variables `get_inputs()` passed to its factory call (`kb_source`);
output dims take the input axis at the same position when the size agrees, else the one input
axis of that size, else a name for their role (`output_dim1`). The leading axis of the first
input becomes a var axis when the model also runs at a half and a quarter of it. The reference
(and the PyTorch-eager baseline) builds `Model(*get_init_inputs())` under seed 0 and calls it.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.progress import step
from kloop.task import kb_source, kb_weights
from kloop.task.kb_axes import RESERVED, Axes, name_axes
from kloop.task.kb_memory import choose_scale, exec_problem, strategies
from kloop.task.load import Task, load_task
from kloop.task.parsing import read_text

SEED = 0
DEFAULT_MEMORY_MB = 8192
"""`kloop verify --memory-mb`'s default (a test keeps the two equal; task must not import verify)."""
_WRAPPER = '''

# ---- added by `kloop task import-kernelbench`: the FlashInfer-Trace entry point ----
import torch as _kloop_torch

_KLOOP_SEED = {seed}
_kloop_models = {{}}


def _kloop_model(device, dtype):
    """Model(*get_init_inputs()) built under a fixed seed, so every caller gets the same weights."""
    key = (str(device), dtype)
    if key not in _kloop_models:
        with _kloop_torch.random.fork_rng(devices=[]):
            _kloop_torch.manual_seed(_KLOOP_SEED)
            model = Model(*get_init_inputs())
        model = model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)
        _kloop_models[key] = model.eval()
    return _kloop_models[key]


@_kloop_torch.no_grad()
def run({params}):
    args = ({params},)
    tensors = [a for a in args if isinstance(a, _kloop_torch.Tensor)]
    float_dtypes = {{a.dtype for a in tensors if a.is_floating_point()}}
    dtype = float_dtypes.pop() if len(float_dtypes) == 1 else None
    device = tensors[0].device if tensors else "cpu"
    return _kloop_model(device, dtype)(*args)
'''


@dataclass
class _Problem:
    """What running the (possibly scaled) problem file once taught us."""

    source: str
    namespace: dict[str, Any]
    inputs: list[Any]
    outputs: list[Any]
    input_names: list[str]
    model: Any = None
    """The Model that produced `outputs`; the size probes run it again rather than build another
    (level3/1_MLP: each build initialises ~1 GB of weights, 2.7 s here)."""
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    factor: float = 1.0


def import_kernelbench(
    file: str | Path, out: str | Path, *, name: str | None = None, scale: float | None = None,
    max_bytes: int | None = None, memory_mb: int = DEFAULT_MEMORY_MB, weights_as_inputs: bool = False,
) -> Task:  # fmt: skip
    """Write a task directory for a KernelBench problem file and return it loaded."""
    import torch

    file, out = Path(file), Path(out)
    problem = _scaled_problem(file, _read_source(file), scale, max_bytes, memory_mb)
    axes = _name_axes(problem)
    step("probing a var axis")
    var_axis, extra_values = _probe_var_axis(problem, axes)
    weights = _weights(problem, axes, var_axis) if weights_as_inputs else []
    inputs = {n: _tensor_spec(t, s, file) for n, t, s in zip(problem.input_names, problem.inputs, axes.inputs, strict=True)}
    inputs.update({w.name: _tensor_spec(w.tensor, axes.weights[w.name], file) for w in weights})
    wrapper = kb_weights.wrapper(problem.input_names, weights) if weights else \
        _WRAPPER.format(seed=SEED, params=", ".join(problem.input_names))  # fmt: skip
    definition = {
        "name": name or _definition_name(file),
        "op_type": "kernelbench",
        "description": _description(problem, file),
        "tags": ["kernelbench", "imported", *(["weights-as-inputs"] if weights else [])],
        "axes": {a: ({"type": "var"} if a == var_axis else {"type": "const", "value": v}) for a, v in axes.sizes.items()},
        "inputs": inputs,
        "outputs": {n: _tensor_spec(t, s, file) for n, t, s in zip(_output_names(problem.outputs), problem.outputs, axes.outputs, strict=True)},
        "reference": _scaled_header(problem) + problem.source.rstrip() + "\n" + wrapper,
        "kloop": _kloop_block(problem, var_axis, axes),
    }  # fmt: skip
    if weights:
        definition["kloop"]["input_ranges"].update(kb_weights.ranges(weights))
    torch.manual_seed(SEED)  # leave the global generator as a fresh process would
    step("writing the task")
    return _write_task(out, definition, problem, var_axis, axes, extra_values, weights)


def _weights(problem: _Problem, axes: Axes, var_axis: str | None) -> list[kb_weights.Weight]:
    """The model's tensors as inputs; their dims named into `axes.weights`."""
    taken = {*problem.input_names, *_output_names(problem.outputs), *axes.sizes}
    weights = kb_weights.module_weights(problem.namespace, taken, SEED)
    sizes = kb_source.module_sizes(problem.source)
    init = kb_source.input_size_names(problem.source, sizes, "get_init_inputs")
    axes.weights = kb_weights.weight_axes(weights, axes.sizes, var_axis, sizes.ints, init)
    return weights


def _scaled_problem(file: Path, source: str, scale: float | None, max_bytes: int | None, memory_mb: int) -> _Problem:
    """Shrink every module size, else only those get_inputs() reads, else its leading dim: the first that runs."""
    failure: BadInput | None = None
    for names in strategies(source):
        step("estimating memory on the meta device")
        plan = choose_scale(file, source, scale=scale, max_bytes=max_bytes, memory_mb=memory_mb, names=names)
        step(f"running the problem on the CPU (scale {plan.factor:g})")
        try:
            problem = _run_problem(file, plan.source)
        except BadInput as exc:
            if not plan.changes:
                raise
            failure = failure or exc
            continue
        problem.changes, problem.factor = plan.changes, plan.factor
        return problem
    assert failure is not None
    raise BadInput(file, f"the problem no longer runs once its sizes are scaled ({failure.what}); "
                         "some size is probably hard-coded in Model: try a larger --scale")  # fmt: skip


def _read_source(file: Path) -> str:
    source = read_text(file, "KernelBench problem")
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise BadInput(file, f"not valid Python: {exc.msg} (line {exc.lineno})") from None
    return source


def _run_problem(file: Path, source: str) -> _Problem:
    import torch

    namespace = exec_problem(file, source)
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(SEED)
            inputs = list(namespace["get_inputs"]())
            model = namespace["Model"](*namespace["get_init_inputs"]()).eval()
            result = model(*inputs)
    except Exception as exc:
        raise BadInput(file, f"running Model on get_inputs() failed: {type(exc).__name__}: {exc}") from None
    outputs = list(result) if isinstance(result, tuple | list) else [result]
    if not outputs or not all(isinstance(o, torch.Tensor) for o in outputs):
        raise BadInput(file, "Model.forward must return a tensor or a tuple of tensors")
    names = _input_names(namespace["Model"], len(inputs))
    return _Problem(source=source, namespace=namespace, inputs=inputs, outputs=outputs, input_names=names, model=model)


def _input_names(model_cls: type, count: int) -> list[str]:
    """forward's parameter names when they fit, else input0, input1, ..."""
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    plain = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(plain) >= count and all(n.isidentifier() and not n.startswith("_kloop") for n in plain[:count]):
        names = plain[:count]
        if len(set(names)) == count and not set(names) & RESERVED:
            return names
    return [f"input{i}" for i in range(count)]


def _output_names(outputs: list[Any]) -> list[str]:
    return ["output"] if len(outputs) == 1 else [f"output{i}" for i in range(len(outputs))]


def _name_axes(problem: _Problem) -> Axes:
    return name_axes(problem.source, problem.namespace, problem.input_names, problem.inputs,
                     _output_names(problem.outputs), problem.outputs)  # fmt: skip


def _tensor_spec(value: Any, shape: list[str] | None, file: Path) -> dict[str, Any]:
    return {"shape": shape, "dtype": _dtype_name(value, file)}


_DTYPES = {
    "torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
    "torch.float8_e4m3fn": "float8_e4m3fn", "torch.float8_e5m2": "float8_e5m2", "torch.int64": "int64",
    "torch.int32": "int32", "torch.int16": "int16", "torch.int8": "int8", "torch.bool": "bool",
}  # fmt: skip


def _dtype_name(value: Any, file: Path) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float32"
    dtype = _DTYPES.get(str(getattr(value, "dtype", type(value).__name__)))
    if dtype is None:
        raise BadInput(file, f"{getattr(value, 'dtype', type(value).__name__)} values have no FlashInfer-Trace dtype")
    return dtype


def _probe_var_axis(problem: _Problem, axes: Axes) -> tuple[str | None, list[int]]:
    """The leading axis of the first tensor input, if the model runs at smaller values of it."""
    first = next((s for s in axes.inputs if s), None)
    if not first:
        return None, []
    axis = first[0]
    value = axes.sizes[axis]
    working = [v for v in sorted({max(1, value // 2), max(1, value // 4)}, reverse=True)
               if v != value and _runs_at(problem, axes, axis, v)]  # fmt: skip
    return (axis, working) if working else (None, [])


def _runs_at(problem: _Problem, axes: Axes, axis: str, value: int) -> bool:
    import torch

    sizes = {**axes.sizes, axis: value}
    args = [
        (torch.randn([sizes[a] for a in shape]).to(t.dtype) if t.is_floating_point() else t.new_zeros([sizes[a] for a in shape]))
        if shape is not None else t
        for t, shape in zip(problem.inputs, axes.inputs, strict=True)
    ]  # fmt: skip
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(SEED)
            result = problem.model(*args)
    except Exception:
        return False
    outs = list(result) if isinstance(result, tuple | list) else [result]
    expected = [None if s is None else [sizes[a] for a in s] for s in axes.outputs]
    return [list(o.shape) if isinstance(o, torch.Tensor) else None for o in outs] == expected


def _kloop_block(problem: _Problem, var_axis: str | None, axes: Axes) -> dict[str, Any]:
    """Input ranges observed in get_inputs() (so indices and positive-only inputs stay valid)."""
    import torch

    ranges: dict[str, dict[str, float]] = {}
    for name, value in zip(problem.input_names, problem.inputs, strict=True):
        if not isinstance(value, torch.Tensor) or value.numel() == 0 or value.dtype == torch.bool:
            continue
        low, high = value.min().item(), value.max().item()
        if value.is_floating_point():
            if low >= 0:
                ranges[name] = {"low": 0.0, "high": float(max(1.0, math.ceil(high)))}
        else:
            ranges[name] = {"low": float(low), "high": float(high)}
    block: dict[str, Any] = {"input_ranges": ranges}
    if var_axis is not None:
        largest = axes.sizes[var_axis]
        block["heldout"] = {"axes": {var_axis: {"min": 1, "max": largest}}}
    return block


def _description(problem: _Problem, file: Path) -> str:
    doc = inspect.getdoc(problem.namespace["Model"]) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else "KernelBench problem"
    scaled = f", sizes scaled by {problem.factor:g}" if problem.changes else ""
    return f"{first} (imported from KernelBench file {file.name}{scaled})"


def _scaled_header(problem: _Problem) -> str:
    if not problem.changes:
        return ""
    changed = ", ".join(f"{k} {old} -> {new}" for k, (old, new) in problem.changes.items())
    return f"# kloop import-kernelbench --scale {problem.factor:g}: {changed}\n"


def _definition_name(file: Path) -> str:
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", file.stem).strip("_").lower()
    return stem if stem.startswith("kb_") else f"kb_{stem}"


def _write_task(out: Path, definition: dict[str, Any], problem: _Problem, var_axis: str | None, axes: Axes,
                extra_values: list[int], weights: list[kb_weights.Weight]) -> Task:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "definition.json").write_text(json.dumps(definition, indent=2) + "\n", encoding="utf-8")
    if weights:
        kb_weights.save(weights, out)
    values = [axes.sizes[var_axis], *extra_values] if var_axis else [None]
    lines = []
    for value in values:
        workload_axes = {var_axis: value} if var_axis else {}
        inputs: dict[str, Any] = {
            n: ({"type": "random"} if hasattr(v, "shape") else {"type": "scalar", "value": v})
            for n, v in zip(problem.input_names, problem.inputs, strict=True)
        }
        inputs.update({w.name: {"type": "safetensors", "path": kb_weights.FILE, "tensor_key": w.name} for w in weights})
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kloop/kernelbench/{definition['name']}/{value}"))
        workload = {"uuid": uid, "axes": workload_axes, "inputs": inputs}
        lines.append(json.dumps({"definition": definition["name"], "solution": None, "workload": workload, "evaluation": None}))
    (out / "workloads.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _write_baseline(out / "baseline", definition)
    (out / "README.md").write_text(_readme(definition, problem, bool(weights)), encoding="utf-8")
    return load_task(out)


def _write_baseline(folder: Path, definition: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text(definition["reference"], encoding="utf-8")
    manifest = {
        "name": f"{definition['name']}_pytorch_eager",
        "definition": definition["name"],
        "author": "KernelBench",
        "description": "The problem's own PyTorch Model, run eagerly (the KernelBench baseline).",
        "spec": {"language": "python", "target_hardware": ["cpu", "cuda"], "entry_point": "main.py::run",
                 "dependencies": [], "destination_passing_style": False},
        "sources": [{"path": "main.py"}],
    }  # fmt: skip
    (folder / "solution.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _readme(definition: dict[str, Any], problem: _Problem, weights: bool = False) -> str:
    scaled = ""
    if problem.changes:
        changed = ", ".join(f"`{k}` {old} -> {new}" for k, (old, new) in problem.changes.items())
        scaled = f"\nSizes were scaled by {problem.factor:g} at import: {changed}.\n"
    return (
        f"# {definition['name']}\n\n{definition['description']}\n{scaled}\n"
        + (_WEIGHTS_NOTE if weights else _SEED_NOTE)
    )


_SEED_NOTE = (
    "Imported with `kloop task import-kernelbench`. The reference builds "
    f"`Model(*get_init_inputs())` after `torch.manual_seed({SEED})` and calls it; a solution must "
    "produce the same outputs, so it has to create the same weights the same way "
    "(see docs/tasks.md, \"A model with parameters\").\n"
)
_WEIGHTS_NOTE = (
    "Imported with `kloop task import-kernelbench --weights-as-inputs`: the model's parameters and "
    f"buffers, drawn once under `torch.manual_seed({SEED})`, are stored in `{kb_weights.FILE}` and "
    "passed to `run` after the model's own inputs; a solution computes with the weights it is given.\n"
)
