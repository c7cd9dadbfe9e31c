"""Reading a clone's history: one streaming `git log`, and batched diff excerpts.

The log uses control-character separators (record \\x1e, field \\x1f) and `-z` numstat, so
messages with any text, paths with spaces or odd bytes, renames and binary files all parse.
Bytes are decoded per field with replacement: a non-UTF-8 message never stops an ingest.
"""

from __future__ import annotations

import contextlib
import queue
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


@dataclass
class FileChange:
    """One changed file of a commit, from `--numstat`."""

    path: str
    added: int
    deleted: int
    binary: bool = False
    old_path: str | None = None


@dataclass
class RawCommit:
    """A commit as git printed it, before any interpretation."""

    sha: str
    parents: list[str]
    date: str
    author: str
    message: str
    files: list[FileChange] = field(default_factory=list)


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run a short git command in `repo` and return its stdout (BadInput when git refuses)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, check=False, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise HarnessFailure("git is not installed (needed to ingest a repository's history)") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(repo, f"git {args[0]} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout.decode("utf-8", "replace")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _count(raw: bytes) -> int:
    return int(raw) if raw.isdigit() else 0


def parse_numstat(raw: bytes) -> list[FileChange]:
    """`-z --numstat` entries: 'A\\tD\\tpath\\0' or, for renames, 'A\\tD\\t\\0old\\0new\\0'."""
    parts = raw.lstrip(b"\n\x00").split(b"\x00")
    files: list[FileChange] = []
    i = 0
    while i < len(parts):
        item = parts[i].lstrip(b"\n")
        i += 1
        if not item:
            continue
        fields = item.split(b"\t", 2)
        if len(fields) != 3:
            continue
        added, deleted, path = fields
        binary = added == b"-"
        old = None
        if not path:  # a rename or copy: the old and new paths follow as their own entries
            if i + 1 >= len(parts):
                break
            old, path = _decode(parts[i]), parts[i + 1]
            i += 2
        files.append(FileChange(_decode(path), _count(added), _count(deleted), binary, old))
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
        message=_decode(message).strip(), files=parse_numstat(record[end + 1 :]),
    )


def stream_log(repo: Path, revisions: list[str], since: str | None, pathspecs: list[str]) -> Iterator[RawCommit]:
    """Yield commits newest first from ONE `git log` process, parsing while git still writes."""
    cmd = [
        "git", "-C", str(repo), "-c", "core.quotepath=off", "-c", "log.showSignature=false",
        "log", "-z", f"--format={LOG_FORMAT}", "--numstat", "-M", "--diff-merges=first-parent",
        "--no-color", "--no-ext-diff", *([f"--since={since}"] if since else []), *revisions,
        "--", *pathspecs,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    drain.start()
    # a reader thread keeps the pipe empty so git runs ahead while this thread parses
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
        code = proc.wait()
        drain.join()
    if code != 0:
        lines = b"".join(errors).decode("utf-8", "replace").strip().splitlines()
        raise BadInput(repo, f"git log failed: {lines[-1] if lines else code}")


def diff_excerpts(
    repo: Path, commits: list[tuple[str, str | None]], pathspecs: list[str], max_chars: int
) -> dict[str, str]:
    """Short excerpts of each commit's kernel diff from ONE `git diff-tree --stdin` process.

    `commits` are (sha, first parent or None); merges are diffed against their first parent.
    Only changed lines, hunk headers and file names are kept, up to `max_chars` per commit, so a
    huge diff costs reading time but never memory.
    """
    if not commits:
        return {}
    cmd = [
        "git", "-C", str(repo), "-c", "core.quotepath=off", "diff-tree", "--stdin", "--root", "-p",
        "-U0", "-M", "--no-color", "--no-ext-diff", "--pretty=format:%x1e%H", "--", *pathspecs,
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    lines = "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in commits).encode()

    def feed() -> None:
        try:
            proc.stdin.write(lines)
        except BrokenPipeError:
            pass
        finally:
            proc.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    current: str | None = None
    for raw in proc.stdout:
        if raw.startswith(RECORD):
            current = raw[1:].strip().decode("ascii", "replace")
            out[current], sizes[current] = [], 0
            continue
        if current is None or sizes[current] >= max_chars or not raw.strip():
            continue
        if raw.startswith((b"+++", b"---", b"index ", b"new file", b"deleted file", b"similarity")):
            continue
        if raw.startswith(b"diff --git"):
            text = "# " + _decode(raw.rstrip()).split(" b/", 1)[-1]
        elif raw.startswith((b"+", b"-", b"@@")):
            text = _decode(raw.rstrip())[:200]
        else:
            continue
        out[current].append(text)
        sizes[current] += len(text) + 1
    proc.stdout.close()
    proc.wait()
    writer.join()
    return {sha: "\n".join(parts)[:max_chars] for sha, parts in out.items() if parts}
