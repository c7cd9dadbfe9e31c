"""Import a KernelBench problem (`Model`, `get_inputs`, `get_init_inputs`) as a kloop task.

The problem file is run once on the CPU under a fixed seed to learn input and output shapes
and dtypes. Dimensions of equal size share one axis, named after the module-level integer
that holds that size when there is one (`batch_size`, `dim`). The leading axis of the first
input becomes a var axis when the model also runs, with consistent output shapes, at
smaller values of it; those values become extra workloads. The reference (and the
baseline, PyTorch eager) builds `Model(*get_init_inputs())` under the same seed and calls it.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import re
import types
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task.expr import ExpressionError, evaluate
from kloop.task.load import Task, load_task
from kloop.task.parsing import read_text

SEED = 0
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
    """What running the problem file once taught us."""

    source: str
    namespace: dict[str, Any]
    inputs: list[Any]
    outputs: list[Any]
    input_names: list[str]
    axis_names: dict[int, str] = field(default_factory=dict)


def import_kernelbench(file: str | Path, out: str | Path, *, name: str | None = None) -> Task:
    """Write a task directory for a KernelBench problem file and return it loaded."""
    import torch

    file, out = Path(file), Path(out)
    problem = _run_problem(file)
    names = _AxisNames(_module_ints(problem.source))
    input_shapes = [_symbolic(t, names) for t in problem.inputs]
    output_shapes = [_symbolic(t, names) for t in problem.outputs]
    var_axis, extra_values = _probe_var_axis(problem, names, input_shapes, output_shapes)
    definition_name = name or _definition_name(file)
    definition = {
        "name": definition_name,
        "op_type": "kernelbench",
        "description": _description(problem.namespace["Model"], file),
        "tags": ["kernelbench", "imported"],
        "axes": {
            axis: ({"type": "var"} if axis == var_axis else {"type": "const", "value": value})
            for value, axis in names.by_value.items()
        },
        "inputs": {n: _tensor_spec(t, s, file) for n, t, s in zip(problem.input_names, problem.inputs, input_shapes, strict=True)},
        "outputs": {n: _tensor_spec(t, s, file) for n, t, s in zip(_output_names(problem.outputs), problem.outputs, output_shapes, strict=True)},
        "reference": problem.source.rstrip() + "\n" + _WRAPPER.format(seed=SEED, params=", ".join(problem.input_names)),
        "kloop": _kloop_block(problem, var_axis, names),
    }  # fmt: skip
    torch.manual_seed(SEED)  # leave the global generator as a fresh process would
    return _write_task(out, definition, problem, var_axis, names, extra_values)


def _run_problem(file: Path) -> _Problem:
    import torch

    source = read_text(file, "KernelBench problem")
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise BadInput(file, f"not valid Python: {exc.msg} (line {exc.lineno})") from None
    module = types.ModuleType(f"kloop_kernelbench_{abs(hash(file))}")
    namespace = module.__dict__
    namespace["__file__"] = str(file)
    try:
        exec(compile(source, str(file), "exec"), namespace)  # the user's own problem file
    except Exception as exc:
        raise BadInput(file, f"running the problem file failed: {type(exc).__name__}: {exc}") from None
    for symbol in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(namespace.get(symbol)):
            raise BadInput(file, f"a KernelBench problem must define {symbol}")
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
    return _Problem(source=source, namespace=namespace, inputs=inputs, outputs=outputs, input_names=names)


def _input_names(model_cls: type, count: int) -> list[str]:
    """forward's parameter names when they fit, else input0, input1, ..."""
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    plain = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(plain) >= count and all(n.isidentifier() and not n.startswith("_kloop") for n in plain[:count]):
        names = plain[:count]
        if len(set(names)) == count and "args" not in names:
            return names
    return [f"input{i}" for i in range(count)]


def _output_names(outputs: list[Any]) -> list[str]:
    return ["output"] if len(outputs) == 1 else [f"output{i}" for i in range(len(outputs))]


def _module_ints(source: str) -> dict[str, int]:
    """Module-level integer assignments (`N = 4096`, `M = 1024 * 2`), in source order (for naming axes)."""
    found: dict[str, int] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        try:
            value = evaluate(ast.unparse(node.value), found)
        except ExpressionError:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, value)
    return found


class _AxisNames:
    """One axis per distinct dimension size, named after a module integer when one holds it."""

    def __init__(self, module_ints: dict[str, int]) -> None:
        self.by_value: dict[int, str] = {}
        self._preferred: dict[int, str] = {}
        for var, value in module_ints.items():
            self._preferred.setdefault(value, var)

    def name(self, value: int) -> str:
        if value not in self.by_value:
            candidate = self._preferred.get(value, f"d{value}")
            if candidate in self.by_value.values() or candidate in {"run", "torch"}:
                candidate = f"d{value}"
            self.by_value[value] = candidate
        return self.by_value[value]


def _symbolic(value: Any, names: _AxisNames) -> list[str] | None:
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    return [names.name(int(n)) for n in value.shape]


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


def _probe_var_axis(
    problem: _Problem, names: _AxisNames, input_shapes: list[list[str] | None], output_shapes: list[list[str] | None]
) -> tuple[str | None, list[int]]:
    """The leading axis of the first tensor input, if the model runs at smaller values of it."""
    first = next((s for s in input_shapes if s), None)
    if not first:
        return None, []
    axis = first[0]
    value = next(v for v, n in names.by_value.items() if n == axis)
    working = [v for v in sorted({max(1, value // 2), max(1, value // 4)}, reverse=True)
               if v != value and _runs_at(problem, names, axis, v, input_shapes, output_shapes)]  # fmt: skip
    return (axis, working) if working else (None, [])


def _runs_at(
    problem: _Problem, names: _AxisNames, axis: str, value: int,
    input_shapes: list[list[str] | None], output_shapes: list[list[str] | None],
) -> bool:  # fmt: skip
    import torch

    sizes = {n: (value if n == axis else v) for v, n in names.by_value.items()}
    args = [
        (torch.randn([sizes[a] for a in shape]).to(t.dtype) if t.is_floating_point() else t.new_zeros([sizes[a] for a in shape]))
        if shape is not None else t
        for t, shape in zip(problem.inputs, input_shapes, strict=True)
    ]  # fmt: skip
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(SEED)
            model = problem.namespace["Model"](*problem.namespace["get_init_inputs"]()).eval()
            result = model(*args)
    except Exception:
        return False
    outs = list(result) if isinstance(result, tuple | list) else [result]
    expected = [None if s is None else [sizes[a] for a in s] for s in output_shapes]
    return [list(o.shape) if isinstance(o, torch.Tensor) else None for o in outs] == expected


def _kloop_block(problem: _Problem, var_axis: str | None, names: _AxisNames) -> dict[str, Any]:
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
        largest = next(v for v, n in names.by_value.items() if n == var_axis)
        block["heldout"] = {"axes": {var_axis: {"min": 1, "max": largest}}}
    return block


def _description(model_cls: type, file: Path) -> str:
    doc = inspect.getdoc(model_cls) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else "KernelBench problem"
    return f"{first} (imported from KernelBench file {file.name})"


def _definition_name(file: Path) -> str:
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", file.stem).strip("_").lower()
    return stem if stem.startswith("kb_") else f"kb_{stem}"


def _write_task(
    out: Path, definition: dict[str, Any], problem: _Problem, var_axis: str | None,
    names: _AxisNames, extra_values: list[int],
) -> Task:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "definition.json").write_text(json.dumps(definition, indent=2) + "\n", encoding="utf-8")
    sizes = {n: v for v, n in names.by_value.items()}
    values = [sizes[var_axis], *extra_values] if var_axis else [None]
    lines = []
    for value in values:
        axes = {var_axis: value} if var_axis else {}
        inputs = {
            n: ({"type": "random"} if hasattr(v, "shape") else {"type": "scalar", "value": v})
            for n, v in zip(problem.input_names, problem.inputs, strict=True)
        }
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kloop/kernelbench/{definition['name']}/{value}"))
        workload = {"uuid": uid, "axes": axes, "inputs": inputs}
        lines.append(json.dumps({"definition": definition["name"], "solution": None, "workload": workload, "evaluation": None}))
    (out / "workloads.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _write_baseline(out / "baseline", definition)
    (out / "README.md").write_text(_readme(definition), encoding="utf-8")
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


def _readme(definition: dict[str, Any]) -> str:
    return (
        f"# {definition['name']}\n\n{definition['description']}\n\n"
        "Imported with `kloop task import-kernelbench`. The reference builds "
        f"`Model(*get_init_inputs())` after `torch.manual_seed({SEED})` and calls it; a solution must "
        "produce the same outputs, so it has to create the same weights the same way.\n"
    )
