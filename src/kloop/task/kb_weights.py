"""`--weights-as-inputs`: a KernelBench model's parameters and buffers become task inputs.

By default a KernelBench task keeps its weights inside `Model`, and a solution must re-create
them (same seed, same order of creation). With this option the import draws them once, as the
reference would (`Model(*get_init_inputs())` after `torch.manual_seed(0)`), stores them in
`weights.safetensors` next to the task, and lists each as an input after the model's own, so a
solution simply receives them: `run(x, conv_weight, conv_bias, bias)`. The reference calls the
module through `torch.func.functional_call` with the tensors it is given, so held-out draws
(uniform over each tensor's observed range, which is PyTorch's own default initialisation for
Linear and Conv layers) are as valid as the stored weights.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE = "weights.safetensors"


@dataclass(frozen=True)
class Weight:
    """One module tensor as a task input."""

    name: str
    key: str
    tensor: Any


def module_weights(namespace: dict[str, Any], taken: set[str], seed: int) -> list[Weight]:
    """Every parameter and buffer of `Model(*get_init_inputs())` built under `seed`, named for inputs."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = namespace["Model"](*namespace["get_init_inputs"]())
    tensors = [*model.named_parameters(), *model.named_buffers()]
    weights, used = [], set(taken)
    for key, tensor in tensors:
        name = re.sub(r"\W", "_", key)
        name = name if name.isidentifier() and name not in used else f"w_{name}"
        while name in used:
            name += "_"
        used.add(name)
        weights.append(Weight(name, key, tensor.detach().contiguous().clone()))
    return weights


def save(weights: list[Weight], folder: Path) -> None:
    from safetensors.torch import save_file

    save_file({w.name: w.tensor for w in weights}, str(folder / FILE))


def weight_axes(weights: list[Weight], axes: dict[str, int], var_axis: str | None, module_ints: dict[str, int],
                init_names: set[str]) -> dict[str, list[str]]:  # fmt: skip
    """Weight dims: the one size `get_init_inputs()` reads with that value, else the one module integer
    (never the var axis), else a role name (`conv_weight_dim0`)."""
    shapes = {}
    for w in weights:
        shape = []
        for k, n in enumerate(int(s) for s in w.tensor.shape):
            fits = [v for v, m in module_ints.items() if m == n and v != var_axis and axes.get(v, n) == n]
            from_init = [v for v in fits if v in init_names]
            same = from_init if len(from_init) == 1 else fits
            name = same[0] if len(same) == 1 and n > 1 else f"{w.name}_dim{k}"
            axes[name] = n
            shape.append(name)
        shapes[w.name] = shape
    return shapes


def ranges(weights: list[Weight]) -> dict[str, dict[str, float]]:
    """Each weight's observed [min, max]: held-out draws are uniform there."""
    out = {}
    for w in weights:
        if w.tensor.numel() and w.tensor.dtype.is_floating_point:
            out[w.name] = {"low": float(w.tensor.min()), "high": float(w.tensor.max())}
    return out


WRAPPER = '''

# ---- added by `kloop task import-kernelbench --weights-as-inputs`: the FlashInfer-Trace entry point ----
import torch as _kloop_torch

_KLOOP_WEIGHTS = {keys!r}
_kloop_modules = {{}}


def _kloop_module():
    """Model's structure; its tensors are replaced by the inputs on every call."""
    if "m" not in _kloop_modules:
        try:
            with _kloop_torch.device("meta"):
                model = Model(*get_init_inputs())
        except Exception:
            model = Model(*get_init_inputs())
        _kloop_modules["m"] = model.eval()
    return _kloop_modules["m"]


@_kloop_torch.no_grad()
def run({params}):
    state = dict(zip(_KLOOP_WEIGHTS, ({weights}), strict=True))
    return _kloop_torch.func.functional_call(_kloop_module(), state, ({inputs}), strict=True)
'''


def wrapper(input_names: list[str], weights: list[Weight]) -> str:
    names = [w.name for w in weights]
    return WRAPPER.format(keys=[w.key for w in weights], params=", ".join([*input_names, *names]),
                          weights=", ".join(names) + ",", inputs=", ".join(input_names) + ",")  # fmt: skip
