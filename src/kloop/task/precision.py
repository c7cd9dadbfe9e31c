"""Run a reference in float64 *through its own casts*: the supervisor's higher-precision ground truth.

Upcasting a reference's inputs is not enough: FlashInfer-Trace references call `.float()`,
`.to(torch.float32)` and `torch.zeros(..., dtype=torch.float32)` inside, so float64 inputs are cast
straight back down and the "float64" answer is the float32 one. `float64_mode()` is a
`TorchFunctionMode` that rewrites those requests while the reference runs: every cast or `dtype=`
that asks for float32, float16 or bfloat16 gets float64, `.float()` / `.half()` / `.bfloat16()`
become `.double()`, and the default dtype is float64 (Python-float `torch.tensor`, int-to-float
division). What it leaves alone, because it is part of the op's meaning rather than its working
precision: casts to 8-bit floats and integers (a quantizer's rounding is its output), and
`view(dtype)` bit reinterpretation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

WORKING = ("float32", "float16", "bfloat16")
"""Float dtypes that are working precision: asked-for casts to them are raised to float64."""


def _working() -> frozenset[Any]:
    import torch

    return frozenset(getattr(torch, name) for name in WORKING)


def _raise(value: Any, low: frozenset[Any]) -> Any:
    import torch

    return torch.float64 if isinstance(value, torch.dtype) and value in low else value


@contextmanager
def float64_mode() -> Iterator[None]:
    """While active, working-precision float casts and dtypes inside torch calls become float64."""
    import torch
    from torch.overrides import TorchFunctionMode

    low = _working()
    down = {torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}
    keep = {torch.Tensor.view}  # reinterpreting bits must keep its dtype

    class Float64(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func in down and args and isinstance(args[0], torch.Tensor):
                return args[0].double()
            if func not in keep:
                args = tuple(_raise(a, low) for a in args)
                if "dtype" in kwargs:
                    kwargs["dtype"] = _raise(kwargs["dtype"], low)
            return func(*args, **kwargs)

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Float64():
            yield
    finally:
        torch.set_default_dtype(previous)


def upcast(inputs: dict[str, Any]) -> dict[str, Any]:
    """Float tensor inputs as float64 (exact for every float dtype); others unchanged."""
    import torch

    return {k: v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}  # fmt: skip


def run_float64(run: Callable[..., Any], inputs: dict[str, Any]) -> Any:
    """`run(*inputs)` on float64 inputs with every working-precision cast inside it raised to float64."""
    import torch

    with torch.no_grad(), float64_mode():
        return run(*upcast(inputs).values())
