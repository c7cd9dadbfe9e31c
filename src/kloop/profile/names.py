"""Kernel names comparable across tools, so one kernel from ncu and from rocprof diffs as one.

Tools print the same kernel differently: ncu "void ns::foo<128>(float *, int)", rocprofv3
"foo(float*, int)" or the mangled "_Z3fooPfi.kd", rocprof-compute "foo(...) [clone .kd]" or
"foo(...) (.kd)", old Triton "foo_0d1d2d", OpenMP "__omp_offloading_fd00_2c8a1f_foo_l42".
`normalize_kernel_name` reduces each to a readable base name ("foo").

Public names: `normalize_kernel_name(raw) -> str`, `demangle(raw) -> str`.
"""

from __future__ import annotations

import re

# Suffixes code objects and compilers append; removed before anything else (order matters).
_TRAILING_SUFFIXES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\s*\[clone [^\]]*\]\s*$"),  # rocprof-compute on ROCm 6.0: "[clone .kd]"
    re.compile(r"\s*\(\.kd\)\s*$"),  # rocprof-compute on ROCm 6.1+: "(.kd)"
    re.compile(r"\.kd$"),  # HSA kernel descriptor symbol
    re.compile(r"(?:\.(?:llvm|lto_priv|isra|constprop|part|cold|clone)(?:\.\d+)?)+$"),  # compiler clones
    re.compile(r"\$local$"),
)

# Old Triton specialisation suffix: one tag per argument (0d = divisible by 16, 3c = constant,
# 4de = divisible and equal-to-1 ...). At least one letter tag, so a plain "_2" survives.
_TRITON_SIGNATURE = re.compile(r"_(?:\d+(?:de|dc|d|c|e))+$")
# A trailing hex digest that JITs append to make names unique per build.
_HEX_HASH = re.compile(r"_[0-9a-f]{16,}$")
# OpenMP target regions: __omp_offloading_<device id>_<file id>_<function>_l<line>; the two ids
# change from machine to machine, function and line do not.
_OMP_OFFLOAD = re.compile(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_(?P<func>.+?)_(?P<line>l\d+)$")

# Templates whose own name says nothing: the kernel is named by their first template argument.
_WRAPPER_KERNELS = frozenset({"Kernel", "Kernel2", "device_kernel", "kernel", "launch_kernel"})


def demangle(raw: str) -> str:
    """Itanium-demangle `raw` when it is a mangled symbol; anything else comes back unchanged."""
    if not raw.startswith("_Z"):
        return raw
    try:
        import cxxfilt  # local: only mangled names need it
    except ImportError:  # e.g. a device machine where nothing can be installed
        return _demangle_with_binary(raw)
    try:
        return cxxfilt.demangle(raw)
    except (cxxfilt.InvalidName, UnicodeDecodeError):
        return raw


def _demangle_with_binary(raw: str) -> str:
    """binutils' c++filt when the Python binding is missing; the raw name when neither is there."""
    import shutil
    import subprocess

    tool = shutil.which("c++filt")
    if tool is None:
        return raw
    done = subprocess.run([tool, raw], capture_output=True, text=True, timeout=10, check=False)
    return done.stdout.strip() or raw


def _strip_suffixes(name: str) -> str:
    previous = None
    while previous != name:
        previous = name
        for pattern in _TRAILING_SUFFIXES:
            name = pattern.sub("", name)
    return name.strip()


def _cut_argument_list(name: str) -> str:
    """Drop the trailing top-level "(...)" (and a trailing " const"), keeping "(anonymous namespace)"."""
    text = re.sub(r"\s+const$", "", name.rstrip())
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                head = text[:index].rstrip()
                return head if head and not head.endswith("::") else text
    return text


def _split_templates(name: str) -> tuple[str, list[str]]:
    """("foo", ["A", "B<int>"]) for "foo<A, B<int> >": text outside <...>, top-level arguments."""
    outside: list[str] = []
    arguments: list[str] = []
    current: list[str] = []
    depth = 0
    for char in name:
        if char == "<":
            depth += 1
            if depth == 1:
                current = []
                continue
        elif char == ">" and depth:
            depth -= 1
            if depth == 0:
                arguments.append("".join(current).strip())
                continue
        elif char == "," and depth == 1:
            arguments.append("".join(current).strip())
            current = []
            continue
        (current if depth else outside).append(char)
    return "".join(outside), arguments


def _base_identifier(text: str) -> str:
    """Last `::` component, without a return type in front ("void ns::foo" -> "foo")."""
    last = text.split("::")[-1].strip()
    return last.split()[-1] if last.split() else last


def _readable_base(name: str) -> str:
    without_args = _cut_argument_list(name)
    outside, template_args = _split_templates(without_args)
    base = _base_identifier(outside)
    if base in _WRAPPER_KERNELS and template_args:
        inner_outside, _ = _split_templates(_cut_argument_list(template_args[0]))
        inner = _base_identifier(inner_outside)
        if re.fullmatch(r"[A-Za-z_]\w*", inner):
            base = inner
    return base


def normalize_kernel_name(raw: str) -> str:
    """A readable base name that is the same for one kernel across ncu, rocprofv3, rocprof-compute.

    Steps: strip descriptor/clone suffixes, demangle, drop the argument list, template
    arguments, namespaces and return type, then JIT hashes (Triton signature tags, hex
    digests, OpenMP device/file ids). Names that are already bare come back unchanged.
    """
    text = _strip_suffixes(raw.strip().strip('"'))
    text = _strip_suffixes(demangle(text))
    if not text:
        return raw.strip()
    base = _readable_base(text) or text
    if match := _OMP_OFFLOAD.match(base):
        base = f"{match['func']}_{match['line']}"
    base = _TRITON_SIGNATURE.sub("", base)
    base = _HEX_HASH.sub("", base)
    return base or text
