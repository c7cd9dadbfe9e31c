"""Kernel names comparable across tools: delegates to `kloop.profile.names` (AMD engineer's module).

Until that module lands, a minimal fallback keeps the bare function name: no return type, no
template arguments, no parameter list, no namespace (so `void ns::k<128>(float*)` -> `k`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

_CANDIDATES = ("normalize_kernel_name", "normalize_name", "normalize")


def _delegate() -> Callable[[str], str] | None:
    try:
        module = importlib.import_module("kloop.profile.names")
    except ImportError:
        return None
    for attr in _CANDIDATES:
        function = getattr(module, attr, None)
        if callable(function):
            return function
    return None


def _strip_balanced(text: str, open_char: str, close_char: str) -> str:
    out, depth = [], 0
    for char in text:
        if char == open_char:
            depth += 1
        elif char == close_char and depth:
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def fallback_kernel_name(name: str) -> str:
    """The bare function name of a (possibly demangled) kernel name."""
    bare = _strip_balanced(_strip_balanced(name.strip(), "(", ")"), "<", ">").strip()
    bare = bare.split()[-1] if bare.split() else bare
    bare = bare.split("::")[-1]
    return re.sub(r"[^\w.$]", "", bare) or name


def normalized_kernel_name(name: str) -> str:
    """Normalized name via kloop.profile.names when present, else the fallback."""
    function = _delegate()
    if function is not None:
        try:
            result = function(name)
        except Exception:  # a half-written module elsewhere must not break reading
            result = None
        if isinstance(result, str) and result:
            return result
    return fallback_kernel_name(name)
