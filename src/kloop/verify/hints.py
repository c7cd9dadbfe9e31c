"""Hints that turn a bare candidate error into its likely cause.

A value-returning `run(x)` under the default `destination_passing_style: true` fails with
`TypeError: run() takes 1 positional argument but 2 were given`, which names neither the spec
field nor what kloop expected; this names both valid signatures for the task at hand.
"""

from __future__ import annotations

import re

_ARITY = re.compile(r"TypeError: .*(positional argument|required positional|takes \d+|takes from|takes no arguments|"
                    r"missing \d+|expected \d+ argument|incompatible function arguments)")  # fmt: skip


def call_signature_hint(error: str, dps: bool, inputs: list[str], outputs: list[str]) -> str:
    """'' unless `error` looks like a wrong call signature; else which call kloop made and the two valid ones."""
    if not _ARITY.search(error):
        return ""
    ins, outs = ", ".join(inputs), ", ".join(outputs)
    both = ", ".join([*inputs, *outputs])
    made = f"run({both}) because spec.destination_passing_style is true (the default)" if dps \
        else f"run({ins}) because spec.destination_passing_style is false"  # fmt: skip
    return (f"hint: kloop called {made}; the two valid signatures are destination_passing_style true: "
            f"run({both}) writing the outputs in place and returning nothing, or destination_passing_style false: "
            f"run({ins}) returning {outs if len(outputs) == 1 else '(' + outs + ')'}")
