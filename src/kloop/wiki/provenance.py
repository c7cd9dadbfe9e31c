"""Where a commit came from: PR numbers, web addresses, the licence, and which paths are kernels.

Each rule is a table row (regexes, phrase sets, path patterns), not a branch in code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from pydantic import BaseModel, Field

# How histories name the pull/merge request a commit came from; first match wins.
PR_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^Merge pull request #(\d+)\b", re.M),
    re.compile(r"\(#(\d+)\)\s*$", re.M),
    re.compile(r"^(?:PR|Pull-Request|Pull-request|Pull request|Merge-Request)\s*:\s*(?:#|!)?(\d+)\s*$", re.M | re.I),
    re.compile(r"^(?:PR|Pull-Request|Reviewed-on|Merge-Request)\s*:\s*\S*/(?:pull|merge_requests)/(\d+)\S*$", re.M | re.I),
    re.compile(r"^See merge request \S*!(\d+)\s*$", re.M),
)

# Licence files and the phrases that identify each licence (all phrases of a row must appear).
LICENSE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING", "LICENSE.TXT")
LICENSE_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MIT", ("permission is hereby granted, free of charge",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",)),
    ("GPL-3.0", ("gnu general public license", "version 3")),
)

# Remote address forms -> (host, owner/name); web URL templates per host kind.
_REMOTE = re.compile(r"^(?:https?://(?:[^@/]+@)?|ssh://(?:[^@/]+@)?|git@)(?P<host>[^/:]+)[:/](?P<path>.+?)(?:\.git)?/?$")
WEB_TEMPLATES: dict[str, tuple[str, str]] = {
    "github.com": ("https://github.com/{path}/commit/{sha}", "https://github.com/{path}/pull/{pr}"),
    "gitlab.com": ("https://gitlab.com/{path}/-/commit/{sha}", "https://gitlab.com/{path}/-/merge_requests/{pr}"),
}


def pr_number(message: str) -> int | None:
    """The PR/MR number a commit message names, if any."""
    for pattern in PR_PATTERNS:
        if m := pattern.search(message):
            return int(m.group(1))
    return None


def detect_license(text: str) -> str | None:
    """SPDX id of a licence text, from identifying phrases."""
    folded = " ".join(text.lower().split())
    for spdx, phrases in LICENSE_PHRASES:
        if all(p in folded for p in phrases):
            return spdx
    return None


@dataclass
class RemoteWeb:
    """Web addresses of a repository hosted on a known forge."""

    host: str
    path: str

    def commit_url(self, sha: str) -> str | None:
        template = WEB_TEMPLATES.get(self.host)
        return template[0].format(path=self.path, sha=sha) if template else None

    def pr_url(self, pr: int) -> str | None:
        template = WEB_TEMPLATES.get(self.host)
        return template[1].format(path=self.path, pr=pr) if template else None


def web_for(remote: str | None, repo: str | None) -> RemoteWeb | None:
    """The forge of `origin`; else, when origin is a local mirror, github.com/OWNER/NAME from --repo."""
    if remote and (web := remote_web(remote)) is not None:
        return web
    local = not remote or remote.startswith(("/", "file://", ".", "~")) or ("://" not in remote and "@" not in remote)
    if local and repo and re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", repo):
        return RemoteWeb("github.com", repo)
    return None


def remote_web(url: str) -> RemoteWeb | None:
    """github.com / gitlab.com remote (https or ssh form) -> its web location."""
    m = _REMOTE.match(url.strip())
    if not m or m.group("host").lower() not in WEB_TEMPLATES:
        return None
    return RemoteWeb(m.group("host").lower(), m.group("path"))


class KernelPathRules(BaseModel):
    """Which changed paths count as kernel code (configurable; defaults fit CUDA/HIP/Triton repos)."""

    device_extensions: list[str] = Field(
        default=[".cu", ".cuh", ".hip", ".cl", ".s", ".ptx", ".ll", ".mlir"],
        description="Always kernel code.",
    )
    binary_extensions: list[str] = Field(
        default=[".co", ".hsaco", ".cubin", ".fatbin"],
        description="Compiled kernel objects (aiter ships its assembly kernels as hsa/**.co): kernel changes named by path.",
    )
    binary_words: dict[str, list[str]] = Field(
        default={".co": ["asm"], ".hsaco": ["asm"]},
        description="Words a compiled kernel object's type adds to its path words: an AMD code object shipped in a "
        "repository is an assembled kernel (aiter's hsa/**.co, Tensile's), which is what 'asm kernel' asks for.",
    )
    test_dirs: list[str] = Field(
        default=["test", "tests", "op_tests", "unittest", "unittests", "testing"],
        description="Directories whose files are tests: secondary evidence, never what makes a commit a kernel change.",
    )
    host_extensions: list[str] = Field(
        default=[".cpp", ".cc", ".cxx", ".h", ".hpp", ".inl", ".inc", ".py"],
        description="Kernel code only under a kernel directory or with a kernel-ish file name.",
    )
    kernel_dirs: list[str] = Field(
        default=[
            "kernels", "kernel", "csrc", "include/cutlass", "include/cute", "include/ck", "include/ck_tile",
            "cutlass", "cute", "ck_tile", "ops", "triton", "gemm", "attention", "fmha", "moe", "quantization",
            "aiter", "hsa", "deep_gemm", "flashinfer", "sgl-kernel", "jit", "cuda", "hip", "rocm", "device",
            # an MLIR GPU compiler's dialects and lowerings (Triton's lib/Dialect/TritonGPU/Transforms/WSPipeline.cpp)
            "lib/dialect", "lib/conversion",
        ],
        description="Directory names (or nested paths) under which host-language files are kernels.",
    )
    kernel_dir_suffixes: list[str] = Field(
        default=["-kernels", "_kernels", "-kernel", "_kernel"],
        description="A directory named like perf-kernels or triton_kernels holds kernels too.",
    )
    kernel_globs: list[str] = Field(
        default_factory=list,
        description="Paths under which every source file counts as kernel code (fnmatch globs, '*' spans '/': "
        "'third_party/amd/**'): a compiler backend's passes are kernel engineering though named like host code.",
    )
    kernel_name_words: list[str] = Field(
        default=["kernel", "triton", "gemm", "attention", "attn", "mma", "cuda", "hip"],
        description="Words in a file name that make a host-language file a kernel.",
    )

    def roles(self) -> Callable[[str], str | None]:
        """A fast, memoized `path -> 'kernel' | 'binary' | 'test' | None` for one ingest."""
        device, host = frozenset(self.device_extensions), frozenset(self.host_extensions)
        binary = frozenset(self.binary_extensions)
        dirs = tuple(f"/{d}/" for d in self.kernel_dirs)
        suffixes = tuple(f"{s}/" for s in self.kernel_dir_suffixes)
        tests = tuple(f"/{d}/" for d in self.test_dirs)
        words = tuple(self.kernel_name_words)
        globs = tuple(self.kernel_globs)
        seen: dict[str, str | None] = {}

        def role(path: str) -> str | None:
            if path in seen:
                return seen[path]
            directory, _, name = path.lower().rpartition("/")
            dot = name.rfind(".")
            suffix, stem = (name[dot:], name[:dot]) if dot > 0 else ("", name)
            inside = f"/{directory}/"
            found: str | None = None
            if suffix in binary:
                found = "binary"
            elif suffix in device or suffix in host:
                if any(t in inside for t in tests) or stem.startswith("test_") or stem.endswith(("_test", "_tests")):
                    found = "test"
                elif (suffix in device or any(d in inside for d in dirs) or any(s in inside for s in suffixes)
                      or any(w in name for w in words) or any(fnmatchcase(path, g) for g in globs)):
                    found = "kernel"
            seen[path] = found
            return found

        return role

    def kind_words(self) -> Callable[[str], list[str]]:
        """`path -> words its file type adds` (binary_words by extension, case-free)."""
        table = {ext.lower(): words for ext, words in self.binary_words.items()}

        def words(path: str) -> list[str]:
            name = path.rsplit("/", 1)[-1].lower()
            dot = name.rfind(".")
            return table.get(name[dot:], []) if dot > 0 else []

        return words

    def matcher(self) -> Callable[[str], bool]:
        """A fast, memoized `path -> is a kernel change` (source or compiled kernel object)."""
        role = self.roles()
        return lambda path: role(path) in ("kernel", "binary")

    def diff_pathspecs(self) -> list[str]:
        """Pathspecs that keep diff excerpts to source files (no binaries, no data)."""
        exts = [*self.device_extensions, *self.host_extensions]
        return [f":(glob,icase)**/*{e}" for e in exts]
