"""Reading a clone's history: one streaming `git log`, and batched diff excerpts.

The log uses control-character separators (record \\x1e, field \\x1f) and `-z` numstat, so
messages with any text, paths with spaces or odd bytes, renames and binary files all parse.
Bytes are decoded per field with replacement: a non-UTF-8 message never stops an ingest.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kloop.errors import BadInput, HarnessFailure

RECORD = b"\x1e"
FIELD = b"\x1f"
LOG_FORMAT = "%x1e%H%x1f%P%x1f%aI%x1f%an%x1f%B%x1f"
CHUNK = 1 << 20
# No pager, no signatures, no colour, no lazy fetch of missing blobs from a promisor remote
# (git >= 2.44 honours GIT_NO_LAZY_FETCH; older git may still fetch for diff excerpts).
GIT = ["git", "-c", "core.quotepath=off", "-c", "log.showSignature=false", "-c", "color.ui=never"]
# Files bigger than this are diffed as binary (generated tables, vendored sources): their text
# costs most of the diff pass and says little in a 1,200-character excerpt.
BIG_FILE = "64k"
GIT_ENV = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}


@dataclass
class FileChange:
    """One changed file of a commit, from `--raw` (status A, M, D, T; line counts come later)."""

    path: str
    added: int = 0
    deleted: int = 0
    binary: bool = False
    old_path: str | None = None
    status: str = "M"


@dataclass
class RawCommit:
    """A commit as git printed it, before any interpretation."""

    sha: str
    parents: list[str]
    date: str
    author: str
    message: str
    files: list[FileChange] = field(default_factory=list)
    diff_missing: bool = False  # its tree could not be read: the message is all there is


@dataclass
class LogStats:
    """What reading a history could not do: commits whose diff or whole object was unreadable."""

    diff_missing: int = 0
    unreadable: int = 0
    errors: list[str] = field(default_factory=list)


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run a short git command in `repo` and return its stdout (BadInput when git refuses)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, check=False, stdin=subprocess.DEVNULL, env=GIT_ENV
        )
    except FileNotFoundError:
        raise HarnessFailure("git is not installed (needed to ingest a repository's history)") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(repo, f"git {args[0]} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout.decode("utf-8", "replace")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def parse_raw(raw: bytes) -> list[FileChange]:
    """`-z --raw --no-renames` entries: ':oldmode newmode oldsha newsha S\0path\0'."""
    parts = raw.split(b"\x00")
    files: list[FileChange] = []
    i = 0
    while i < len(parts):
        meta = parts[i].strip(b"\n")
        i += 1
        if not meta.startswith(b":") or i >= len(parts):
            continue
        status = meta.rsplit(b" ", 1)[-1][:1].decode("ascii", "replace") or "M"
        files.append(FileChange(_decode(parts[i]), status=status))
        i += 1
    return files


def parse_record(record: bytes) -> RawCommit | None:
    """One `\\x1e`-led record of the log; None for anything that is not a commit."""
    end = record.rfind(FIELD)
    if end < 0:
        return None
    head = record[:end].split(FIELD, 4)
    if len(head) != 5 or len(head[0]) < 40:
        return None
    sha, parents, date, author, message = head
    return RawCommit(
        sha=_decode(sha), parents=_decode(parents).split(), date=_decode(date), author=_decode(author),
        message=_decode(message).strip(), files=parse_raw(record[end + 1 :]),
    )


def _records(proc: subprocess.Popen) -> Iterator[RawCommit]:
    """Parse a git process's stdout while git still writes (a pump thread keeps the pipe empty)."""
    assert proc.stdout is not None
    chunks: queue.Queue[bytes] = queue.Queue(maxsize=64)

    def pump() -> None:
        while chunk := proc.stdout.read(CHUNK):
            chunks.put(chunk)
        chunks.put(b"")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    buffer = b""
    try:
        while chunk := chunks.get():
            records = (buffer + chunk).split(RECORD)
            buffer = records.pop()
            for record in records:
                if commit := parse_record(record):
                    yield commit
        if commit := parse_record(buffer):
            yield commit
    finally:
        if reader.is_alive():  # the consumer stopped early: let the pump finish and git exit
            proc.kill()
            while reader.is_alive():
                with contextlib.suppress(queue.Empty):
                    chunks.get(timeout=0.1)
        reader.join()
        proc.stdout.close()


def _spawn(cmd: list[str], stdin: bool = False) -> tuple[subprocess.Popen, list[bytes], threading.Thread]:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=GIT_ENV,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
    )
    errors: list[bytes] = []
    assert proc.stderr is not None
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    drain.start()
    return proc, errors, drain


def _last_line(errors: list[bytes], code: int) -> str:
    lines = b"".join(errors).decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit {code}"


def stream_log(
    repo: Path, revisions: list[str], since: str | None, pathspecs: list[str], stats: LogStats | None = None
) -> Iterator[RawCommit]:
    """Yield commits newest first from ONE `git log --raw` (trees only: no blob is read).

    When git stops on an object it cannot read (a broken mirror, a partial clone missing
    trees), the rest of the history is read commit by commit: every readable commit is kept,
    one whose tree is missing is kept with its message alone, and `stats` counts both.
    """
    stats = stats if stats is not None else LogStats()
    cmd = [
        *GIT, "-C", str(repo), "log", "-z", f"--format={LOG_FORMAT}", "--raw", "--no-renames", "--no-abbrev",
        "--diff-merges=first-parent", *([f"--since={since}"] if since else []), *revisions, "--", *pathspecs,
    ]
    proc, errors, drain = _spawn(cmd)
    seen: set[str] = set()
    for commit in _records(proc):
        seen.add(commit.sha)
        yield commit
    code = proc.wait()
    drain.join()
    if code == 0:
        return
    stats.errors.append(_last_line(errors, code))
    listed = git(repo, "rev-list", *([f"--since={since}"] if since else []), *revisions, check=False).split()
    if not listed and not seen:
        raise BadInput(repo, f"git log failed: {stats.errors[-1]}")
    yield from _salvage(repo, [s for s in listed if s not in seen], pathspecs, stats)


def _salvage(repo: Path, todo: list[str], pathspecs: list[str], stats: LogStats) -> Iterator[RawCommit]:
    """Commits after a read failure: `git diff-tree --stdin`, restarted past each commit it cannot read."""
    while todo:
        cmd = [*GIT, "-C", str(repo), "diff-tree", "--stdin", "-z", "-r", "--root", "--raw", "--no-renames",
               "--no-abbrev", "--diff-merges=first-parent", f"--format={LOG_FORMAT}", "--", *pathspecs]
        proc, errors, drain = _spawn(cmd, stdin=True)
        feeder = _feed(proc, "".join(f"{sha}\n" for sha in todo).encode())
        done: set[str] = set()
        for commit in _records(proc):
            done.add(commit.sha)
            yield commit
        code = proc.wait()
        drain.join()
        feeder.join()
        if code == 0:
            return
        stats.errors.append(_last_line(errors, code))
        # diff-tree stops at the first commit it cannot read, in input order: skip past it
        index = next((i for i, sha in enumerate(todo) if sha not in done), len(todo))
        failed, todo = todo[index], todo[index + 1 :]
        if commit := _message_only(repo, failed):
            stats.diff_missing += 1
            yield commit
        else:
            stats.unreadable += 1


def _message_only(repo: Path, sha: str) -> RawCommit | None:
    """The commit's message and metadata without its diff; None when the commit object is gone too."""
    out = subprocess.run(
        [*GIT, "-C", str(repo), "log", "-1", "--no-walk", f"--format={LOG_FORMAT}", sha],
        capture_output=True, check=False, env=GIT_ENV, stdin=subprocess.DEVNULL,
    )
    if out.returncode != 0:
        return None
    commit = parse_record(out.stdout.lstrip(RECORD) + FIELD)
    if commit is not None:
        commit.diff_missing = True
    return commit


def _feed(proc: subprocess.Popen, data: bytes) -> threading.Thread:
    """Write `data` to the process's stdin from a thread (git reads while it writes)."""
    assert proc.stdin is not None

    def feed() -> None:
        try:
            proc.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


@dataclass
class Excerpt:
    """The changed lines of a commit's kernel source diff, and how many were added and deleted."""

    text: str = ""
    added: int = 0
    deleted: int = 0
    identifiers: list[str] = field(default_factory=list)  # names its added lines bring, not ones it only moves


# Names worth indexing: four characters or more (not loop counters), at most MAX_IDENTIFIERS per commit.
# The search reads the names a question gives with the same pattern: a shorter one is never indexed.
NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]{3,}"
_NAME = re.compile(NAME_PATTERN.encode())
MAX_IDENTIFIERS = 300


# Diff lines that carry no change: file headers and metadata.
_SKIP = (b"+++", b"---", b"index ", b"new file", b"deleted file", b"similarity", b"old mode", b"new mode")


def diff_excerpts(
    repo: Path, commits: list[tuple[str, str | None]], pathspecs: list[str], max_chars: int, stats: LogStats | None = None
) -> dict[str, Excerpt]:
    """Excerpts of each commit's kernel diff from one `git diff-tree --stdin` (restarted past unreadable blobs).

    `commits` are (sha, first parent or None); merges are diffed against their first parent.
    Only changed lines, hunk headers and file names are kept, up to `max_chars` per commit, so a
    huge diff costs reading time but never memory. Line counts cover the whole diff.
    After three failures in a row (a partial clone without blobs) the rest keep no excerpt.
    """
    out: dict[str, Excerpt] = {}
    todo, failures = list(commits), 0
    while todo and failures < 3:
        cmd = [*GIT, "-c", f"core.bigFileThreshold={BIG_FILE}", "-C", str(repo), "diff-tree", "--stdin", "--root",
               "-p", "-U0", "--no-renames", "--diff-filter=AM", "--no-ext-diff", "--pretty=format:%x1e%H", "--",
               *pathspecs]
        proc, errors, drain = _spawn(cmd, stdin=True)
        feeder = _feed(proc, "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in todo).encode())
        begun = _read_patches(proc, out, max_chars)
        code = proc.wait()
        drain.join()
        feeder.join()
        if code == 0:
            break
        if stats is not None:
            stats.errors.append(_last_line(errors, code))
        # git stopped inside the last commit it began (or before the first): drop it, go on after it
        failed = begun[-1] if begun else todo[0][0]
        out.pop(failed, None)
        failures = failures + 1 if len(begun) <= 1 else 1
        index = next(i for i, (sha, _) in enumerate(todo) if sha == failed)
        todo = todo[index + 1 :]
    return {sha: e for sha, e in out.items() if e.text or e.added or e.deleted}


def _read_patches(proc: subprocess.Popen, out: dict[str, Excerpt], max_chars: int) -> list[str]:
    """Fill `out` from diff-tree's patch output; the shas begun, in order."""
    assert proc.stdout is not None
    begun: list[str] = []
    current: Excerpt | None = None
    parts: list[str] = []
    size = 0
    brought: dict[bytes, None] = {}
    dropped: set[bytes] = set()
    for raw in proc.stdout:
        if raw.startswith(RECORD):
            if current is not None:
                current.text = "\n".join(parts)[:max_chars]
                current.identifiers = _names(brought, dropped)
            sha = raw[1:].strip().decode("ascii", "replace")
            current, parts, size, brought, dropped = out.setdefault(sha, Excerpt()), [], 0, {}, set()
            begun.append(sha)
            continue
        if current is None or not raw.strip() or raw.startswith(_SKIP):
            continue
        if raw.startswith(b"+"):
            current.added += 1
            brought.update(dict.fromkeys(_NAME.findall(raw)))
        elif raw.startswith(b"-"):
            current.deleted += 1
            dropped.update(_NAME.findall(raw))
        if size >= max_chars:
            continue
        if raw.startswith(b"diff --git"):
            text = "# " + _decode(raw.rstrip()).split(" b/", 1)[-1]
        elif raw.startswith((b"+", b"-", b"@@")):
            text = _decode(raw.rstrip())[:200]
        else:
            continue
        parts.append(text)
        size += len(text) + 1
    if current is not None:
        current.text = "\n".join(parts)[:max_chars]
        current.identifiers = _names(brought, dropped)
    proc.stdout.close()
    return begun


def _names(brought: dict[bytes, None], dropped: set[bytes]) -> list[str]:
    """The names a diff's added lines bring that its deleted lines did not have (a move brings none)."""
    names = (n.decode("ascii") for n in brought if n not in dropped)
    return [n for _, n in zip(range(MAX_IDENTIFIERS), names, strict=False)]
