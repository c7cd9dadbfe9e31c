"""The definition's reference `run`, compiled in a fresh module namespace.

Calling convention (agreed with build and verify): the reference is value-returning,
`run(*inputs_in_definition_order)` returns one tensor or a tuple in `outputs` order.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

from kloop.errors import BadInput
from kloop.task.schema import Definition


def load_reference(definition: Definition) -> Callable[..., Any]:
    """Compile and execute the reference source; return its `run` function."""
    where = f"definition {definition.name}"
    module = types.ModuleType(f"kloop_reference_{definition.name}")
    module.__dict__["__file__"] = f"<reference of {definition.name}>"
    try:
        code = compile(definition.reference, module.__dict__["__file__"], "exec")
        exec(code, module.__dict__)  # the task's own trusted reference, run by the supervisor
    except SyntaxError as exc:
        raise BadInput(where, f"reference is not valid Python: {exc.msg} (line {exc.lineno})") from None
    except Exception as exc:
        raise BadInput(where, f"reference failed to load: {type(exc).__name__}: {exc}") from None
    run = module.__dict__.get("run")
    if not callable(run):
        raise BadInput(where, "reference does not define a callable 'run'")
    return run


def outputs_as_dict(definition: Definition, result: Any, where: str = "reference") -> dict[str, Any]:
    """Map a value-returning call's result (one tensor or a tuple) onto the output names."""
    names = list(definition.outputs)
    values: Sequence[Any]
    if isinstance(result, tuple | list):
        values = result
    elif isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise ValueError(f"{where} returned a dict without outputs {missing}")
        return {n: result[n] for n in names}
    else:
        values = (result,)
    if len(values) != len(names):
        raise ValueError(f"{where} returned {len(values)} values, the definition has {len(names)} outputs")
    return dict(zip(names, values, strict=True))


def run_reference(definition: Definition, inputs: dict[str, Any]) -> dict[str, Any]:
    """Call the reference on inputs (ordered as the definition) and name its outputs."""
    run = load_reference(definition)
    return outputs_as_dict(definition, run(*inputs.values()))
