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

Random draws are data, not working precision: under a fixed seed the reference draws the values
it would natively, then holds them in float64. A float64 draw from the same seed is other numbers,
so a KernelBench reference that builds its model's weights under `manual_seed(0)` computed with
different weights than the baseline in the sandbox and rejected it (examples/kernelbench/mlp:
73,135 of 73,216 outputs off). `uniform_`, `normal_` and the other in-place fills of a float64
tensor draw at the default dtype the caller had (the dtype such a tensor is created with natively:
module parameters); `rand` / `randn` (and `_like`) draw at the dtype asked for, else that default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

WORKING = ("float32", "float16", "bfloat16")
"""Float dtypes that are working precision: asked-for casts to them are raised to float64."""
RANDOM_FILLS = ("uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "log_normal_",
                "cauchy_")  # fmt: skip
"""In-place random fills: drawn at native precision (so are `torch.nn.init`'s initializers)."""
RANDOM_NEW = ("rand", "randn")
"""Random factories (and their `_like`): drawn at native precision."""


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
    fills = {getattr(torch.Tensor, name) for name in RANDOM_FILLS}
    news = {getattr(torch, name) for name in RANDOM_NEW}
    likes = {getattr(torch, f"{name}_like") for name in RANDOM_NEW}
    previous = torch.get_default_dtype()

    class Float64(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func in down and args and isinstance(args[0], torch.Tensor):
                return args[0].double()
            target = args[0] if args else kwargs.get("tensor")  # nn.init dispatches with `tensor=` only
            if _fills(func, fills) and isinstance(target, torch.Tensor) and target.dtype == torch.float64:
                return _fill_natively(func, args, kwargs, previous)
            if (func in news or func in likes) and "out" not in kwargs:
                like = (args[0] if args else kwargs.get("input")) if func in likes else None
                native = kwargs.get("dtype") or (like.dtype if isinstance(like, torch.Tensor)
                                                 and like.dtype != torch.float64 else previous)  # fmt: skip
                if native in low:
                    return func(*args, **{**kwargs, "dtype": native}).to(torch.float64)
            if func not in keep:
                args = tuple(_raise(a, low) for a in args)
                if "dtype" in kwargs:
                    kwargs["dtype"] = _raise(kwargs["dtype"], low)
            return func(*args, **kwargs)

    torch.set_default_dtype(torch.float64)
    try:
        with Float64():
            yield
    finally:
        torch.set_default_dtype(previous)


def _fills(func: Any, fills: set[Any]) -> bool:
    """An in-place random fill, or a `torch.nn.init` initializer: the mode sees those whole (they
    dispatch through `__torch_function__` themselves), never the `uniform_` inside them."""
    return func in fills or (getattr(func, "__module__", None) == "torch.nn.init" and func.__name__.endswith("_"))


def _fill_natively(fill: Any, args: Any, kwargs: dict[str, Any], native: Any) -> Any:
    """`target.fill_(...)` with the values a `native`-dtype tensor would have drawn, held in float64."""
    import torch

    target = args[0] if args else kwargs["tensor"]
    drawn = torch.empty(target.shape, dtype=native, device=target.device)
    if args:
        fill(drawn, *args[1:], **kwargs)
    else:
        fill(**{**kwargs, "tensor": drawn})
    with torch.no_grad():
        target.copy_(drawn)
    return target


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
