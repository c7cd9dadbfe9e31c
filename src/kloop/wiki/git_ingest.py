"""GitIngester: mine a local clone's history into KernelWiki entries, incrementally.

One streaming `git log` reads every commit; commits that touch kernel code become entries
(`pr` when the history names a PR, else `commit`), classified through the alias table, with
provenance (repo, commit, PR, paths, date, web URLs, licence). Diff excerpts come from one
batched `git diff-tree` per batch of kernel commits. A re-run starts after the commit the last
run ended on, and entries are deduplicated by sha either way.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from kloop.errors import BadInput
from kloop.wiki.aliases import AliasTable, tokens_of
from kloop.wiki.compound import CompoundSplitter, splitter_for
from kloop.wiki.gitlog import Excerpt, FileChange, LogStats, RawCommit, diff_excerpts, git, stream_log
from kloop.wiki.provenance import (
    LICENSE_FILES,
    KernelPathRules,
    RemoteWeb,
    detect_license,
    pr_number,
    web_for,
)
from kloop.wiki.schema import Confidence, EntryKind, Source, WikiEntry, utc_now
from kloop.wiki.store import WikiStore

BATCH = 2000
EXCERPT_CHARS = 1200
EXCERPT_MAX_FILES = 8
BODY_CHARS = 8000
PATH_TERM_CHARS = 12000
# Created kernel files kept for the per-file introduction signal (the largest real commit seen: 818).
ADDED_FILES = 2000
# Tags that say nothing about kernel work (a test-only commit tagged only so is not kept).
NOT_KERNEL_TAGS = frozenset(["ci", "docs", "tests"])
# Subjects of mechanical commits (moves, formatting, lint): rarely what introduced a technique.
# "format" is a verb only at the subject's start or after code/clang/fix: "FP8 E4M3 format",
# "tensor format" and "printf format" name a data layout, not a formatting pass.
MECHANICAL = re.compile(
    r"\b(?:move[ds]?|moving|renames?|renamed|reformat\w*|formatting|formatter|lint\w*|ruff|clang-format|typos?|"
    r"clean ?up|cleanups?|revert\w*|bump\w*|reorgani[sz]\w*|restructur\w*|cosmetic)\b"
    r"|^(?:\[[^\]]*\]\s*|\w+:\s*)*\[?format\b|\b(?:code|clang|auto|fix|fix the|clean the)[ -]format\b",
    re.I,
)
MERGE_SUBJECT = re.compile(r"^Merge (?:pull request|branch|remote-tracking branch)\b")
_REPO_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)?$")


@dataclass
class IngestReport:
    """What one ingest run did."""

    repo: str
    commits_seen: int = 0
    entries_added: int = 0
    skipped_non_kernel: int = 0
    skipped_known: int = 0
    skipped_unreadable: int = 0
    diff_missing: int = 0
    history_entries: int = 0  # commits kept only as history (build, CI, tooling), with `history`
    abbreviations: int | None = None  # the repository's learned abbreviations, when this run relearned them
    seconds: float = 0.0
    head: str | None = None

    @property
    def commits_per_s(self) -> float:
        return self.commits_seen / self.seconds if self.seconds > 0 else 0.0


@dataclass
class RepoInfo:
    """Facts about the clone that every entry's provenance repeats."""

    name: str
    path: Path
    web: RemoteWeb | None
    license: str | None
    default_vendor: str


@dataclass(frozen=True)
class NameReader:
    """How a path becomes words beyond its components: run-together names split, file types named."""

    split: CompoundSplitter | None = None
    kind: Callable[[str], list[str]] | None = None


def _words(path: str, reader: NameReader = NameReader()) -> list[str]:
    """A path's directory names and file stem; a snake_case stem also as one word (DeviceGemm_Xdl -> devicegemmxdl);
    the words run-together names join (bf16gemm -> bf16 gemm) and the words its file type adds (a .co: asm)."""
    parts = [part.rsplit(".", 1)[0] if "." in part[1:] else part for part in path.split("/")]
    stem = parts[-1] if parts else ""
    words = [*parts, stem.replace("_", "").replace("-", "")] if "_" in stem or "-" in stem else parts
    if reader.split is not None:
        words += [piece for part in parts for token in tokens_of(part) for piece in reader.split.split(token)]
    if reader.kind is not None:
        words += reader.kind(path)
    return words


def path_terms(paths: list[str], tests: list[str], limit: int = PATH_TERM_CHARS, reader: NameReader = NameReader()) -> str:
    """Searchable words of the changed kernel paths, tests last (secondary evidence).

    Components are deduplicated, so a release that touches 2,000 files under one tree still
    costs a few hundred words.
    """
    text = " ".join(dict.fromkeys(w for path in paths for w in _words(path, reader) if w))
    test_words = " ".join(dict.fromkeys(p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in tests))
    return (text[:limit] + ("\ntests: " + test_words[: limit // 4] if test_words else "")).strip()


# The names a diff adds follow its excerpt on a line of their own, bounded like the excerpt.
IDENTIFIER_PREFIX = "\nidentifiers added: "
IDENTIFIER_CHARS = 4000
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def identifier_line(names: list[str]) -> str:
    """The names a commit's diff adds, as searchable words: each name, and a camelCase name also as its words
    (SpaceFillingCurve: space filling curve), so "the space-filling curve utility" finds the commit that wrote it."""
    if not names:
        return ""
    words = []
    for name in names:
        words.append(name)
        if (parts := _CAMEL.findall(name)) and len(parts) > 1 and not name.isupper() and "_" not in name:
            words += [p.lower() for p in parts]
    return IDENTIFIER_PREFIX + " ".join(words)[:IDENTIFIER_CHARS].rsplit(" ", 1)[0]


def _batches(commits: Iterable[RawCommit]) -> Iterator[list[RawCommit]]:
    """Commits in lists of BATCH: each is written in one transaction while git streams the next."""
    batch: list[RawCommit] = []
    for commit in commits:
        batch.append(commit)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def introduced(files: list[FileChange], is_kernel) -> list[str]:
    """Kernel files the commit created; a file deleted elsewhere in the same commit was moved, not created."""
    gone = {f.path.rsplit("/", 1)[-1] for f in files if f.status == "D"}
    return [f.path for f in files if f.status == "A" and is_kernel(f.path) and f.path.rsplit("/", 1)[-1] not in gone]


def check_since(since: str | None) -> str | None:
    """--since must be an ISO date (YYYY-MM-DD or a full timestamp)."""
    if since is None:
        return None
    try:
        (datetime if "T" in since else date).fromisoformat(since)
    except ValueError:
        raise BadInput("--since", f"not an ISO date (YYYY-MM-DD): {since!r}") from None
    return since


class GitIngester:
    """Turns a clone's history into entries in a WikiStore."""

    def __init__(
        self, store: WikiStore, *, rules: KernelPathRules | None = None, excerpt_chars: int = EXCERPT_CHARS,
        excerpt_max_files: int = EXCERPT_MAX_FILES,
    ) -> None:
        self.store = store
        self.aliases: AliasTable = store.aliases
        self.rules = rules or KernelPathRules()
        self.is_kernel = self.rules.matcher()
        self.reader = NameReader(splitter_for(self.aliases), self.rules.kind_words())
        self.role = self.rules.roles()
        self.excerpt_chars = excerpt_chars
        self.excerpt_max_files = excerpt_max_files

    def ingest(
        self, path: str | Path, repo: str | None = None, since: str | None = None, paths: list[str] | None = None,
        vendor: str | None = None, history: bool = False,
    ) -> IngestReport:
        """Mine `path`; `paths` are globs restricting which files (and so commits) count.

        `vendor` is the repository's vendor for commits that name none (a preset knows that ROCm/triton
        is AMD's); without it the alias table's `repos:` decide, by the repository's short name.
        `history` also keeps every other commit of the repository (build, CI, tooling, tests) as a
        `git:history-only` entry without a diff excerpt: "when did CK start compiling with
        --offload-compress" is a history question too, though no kernel changed.
        """
        started = time.perf_counter()
        since = check_since(since)
        info = self._repo_info(Path(path), repo, vendor)
        report = IngestReport(repo=info.name)
        head = git(info.path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).strip()
        if not head:  # an empty repository has no history yet
            report.seconds = time.perf_counter() - started
            return report
        revisions = self._revisions(info, head)
        pathspecs = [f":(glob){g}" for g in paths or []]
        stats = LogStats()

        def kernel_changes() -> Iterator[RawCommit]:
            for commit in stream_log(info.path, revisions, since, pathspecs, stats):
                report.commits_seen += 1
                if self._is_kernel_change(commit):
                    yield commit
                else:
                    report.skipped_non_kernel += 1

        for batch in _batches(kernel_changes()):
            self._flush(info, batch, report)
        if history:
            self._keep_history(info, revisions, since, report)
        report.skipped_unreadable, report.diff_missing = stats.unreadable, stats.diff_missing
        if report.entries_added:
            report.abbreviations = self.store.relearn_abbreviations(info.name)
        self._record(info, head, report)
        report.head = head
        report.seconds = time.perf_counter() - started
        return report

    def _keep_history(self, info: RepoInfo, revisions: list[str], since: str | None, report: IngestReport) -> None:
        """Every commit of the revisions not yet an entry, as a history-only entry (titles and messages only)."""
        before, known = report.entries_added, report.skipped_known
        for batch in _batches(stream_log(info.path, revisions, since, [], LogStats())):
            self._flush(info, batch, report, history_only=True)
        report.history_entries += report.entries_added - before
        report.skipped_known = known  # the kernel commits this run just added are not "already known"

    def _mechanical(self, subject: str, commit: RawCommit, added: list[str]) -> bool:
        """A move, format or lint commit: by its subject, or most of its kernel files moved rather than created."""
        if MECHANICAL.search(subject):
            return True
        created = sum(f.status == "A" and self.is_kernel(f.path) for f in commit.files)
        return created >= 8 and len(added) < created / 2

    def _kernel_file_count(self, commit: RawCommit) -> int:
        return sum(self.is_kernel(f.path) for f in commit.files)

    def _is_kernel_change(self, commit: RawCommit) -> bool:
        """A kernel file (source or compiled object) changed; without a diff, the message must say so."""
        if any(self.is_kernel(f.path) for f in commit.files):
            return True
        # secondary evidence: a missing diff, or only test files changed; the message must name kernel work
        if commit.diff_missing or any(self.role(f.path) == "test" for f in commit.files):
            found = self.aliases.classify(commit.message)
            return bool(found.techniques or found.arch or set(found.tags) - NOT_KERNEL_TAGS) or (
                "kernel" in commit.message.lower()
            )
        return False

    def _repo_info(self, path: Path, repo: str | None, vendor: str | None = None) -> RepoInfo:
        if not path.exists():
            raise BadInput(path, "no such directory")
        top = git(path, "rev-parse", "--absolute-git-dir", check=False).strip()
        if not top:
            raise BadInput(path, "not a git repository")
        name = repo or (path.resolve().name.removesuffix(".git") or "repo")
        if not _REPO_NAME.match(name):
            raise BadInput("--repo", f"repository name must be NAME or OWNER/NAME without spaces: {name!r}")
        remote = git(path, "config", "--get", "remote.origin.url", check=False).strip()
        return RepoInfo(
            name=name, path=path, web=web_for(remote, repo),
            license=self._license(path), default_vendor=vendor or self.aliases.vendor_for_repo(name) or "any",
        )

    @staticmethod
    def _license(path: Path) -> str | None:
        """The licence of the clone's HEAD, read from its licence file."""
        for name in LICENSE_FILES:
            text = git(path, "show", f"HEAD:{name}", check=False)
            if text and (spdx := detect_license(text)):
                return spdx
        return None

    def _revisions(self, info: RepoInfo, head: str) -> list[str]:
        """HEAD, or `last..HEAD` when the previous run's commit is still an ancestor."""
        state = self.store.ingest_state(info.name)
        if state is None:
            return [head]
        last = state[0]
        proc = subprocess.run(
            ["git", "-C", str(info.path), "merge-base", "--is-ancestor", last, head],
            capture_output=True, check=False,
        )
        if proc.returncode == 0:
            return [f"{last}..{head}"]
        return [head]  # history was rewritten (or the commit is gone): re-read it all, dedupe by sha

    def _flush(self, info: RepoInfo, batch: list[RawCommit], report: IngestReport, history_only: bool = False) -> None:
        """Dedupe, fetch excerpts, build entries and write them in one transaction."""
        if not batch:
            return
        ids = {c.sha: f"{info.name}@{c.sha[:12]}" for c in batch}
        known = self.store.has(list(ids.values()))
        fresh = [c for c in batch if ids[c.sha] not in known]
        report.skipped_known += len(batch) - len(fresh)
        # a commit touching many kernel files (a release, a refactor) costs most of the diff pass and
        # is described by its paths; only focused commits get a diff excerpt
        todo = [
            (c.sha, c.parents[0] if len(c.parents) > 1 else None) for c in fresh
            if not history_only and not c.diff_missing and self._kernel_file_count(c) <= self.excerpt_max_files
        ]
        # git computes the diffs in its own process while this one classifies the batch
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(diff_excerpts, info.path, todo, self.rules.diff_pathspecs(), self.excerpt_chars)
            captured = utc_now()
            entries = [self._entry(info, c, ids[c.sha], captured) for c in fresh]
            excerpts = pending.result()
        for commit, entry in zip(fresh, entries, strict=True):
            excerpt = excerpts.get(commit.sha, Excerpt())
            entry.excerpt = excerpt.text + identifier_line(excerpt.identifiers)
            entry.stats["added"], entry.stats["deleted"] = excerpt.added, excerpt.deleted
            if history_only:
                entry.stats["history_only"] = 1
        report.entries_added += self.store.add(entries, replace=False)

    def _entry(self, info: RepoInfo, commit: RawCommit, entry_id: str, captured: str) -> WikiEntry:
        """One commit -> one entry: title, classification, provenance."""
        message = commit.message or "(empty commit message)"
        lines = [line for line in message.splitlines() if line.strip()]
        subject = lines[0].strip() if lines else message
        title = subject
        if MERGE_SUBJECT.match(subject) and len(lines) > 1:
            title = lines[1].strip()  # GitHub puts the PR title on the line after "Merge pull request"
        kernel_files = [f for f in commit.files if self.is_kernel(f.path)]
        tests = [f.path for f in commit.files if self.role(f.path) == "test"]
        paths = [f.path for f in kernel_files if f.status != "D"] or [f.path for f in kernel_files] or tests
        added = introduced(commit.files, self.is_kernel)
        terms = path_terms(paths, tests, reader=self.reader)
        # the path words, deduplicated, classify as well as the paths themselves, at a fraction of the cost
        found = self.aliases.classify(message + "\n" + terms[:1500])
        pr = pr_number(message)
        url = None
        if info.web is not None:
            url = info.web.pr_url(pr) if pr is not None else info.web.commit_url(commit.sha)
        return WikiEntry(
            id=entry_id,
            kind=EntryKind.pr if pr is not None else EntryKind.commit,
            title=title[:300],
            body=message[:BODY_CHARS],
            tags=[*found.tags, *(f"finding:{f}" for f in found.findings)],
            vendor=found.vendor(info.default_vendor),
            arch=found.arch,
            techniques=found.techniques,
            source=Source(
                repo=info.name, url=url, commit=commit.sha, pr=pr, paths=paths[:50], date=commit.date,
                license=info.license,
            ),
            confidence=Confidence.source_reported,
            captured_at=captured,
            stats={
                "files": len(commit.files),
                "kernel_files": len(kernel_files),
                "added_files": len(added),
                "binary_files": sum(self.role(f.path) == "binary" for f in commit.files),
                "test_files": len(tests),
                **({"diff_missing": 1} if commit.diff_missing else {}),
                **({"mechanical": 1} if self._mechanical(subject, commit, added) else {}),
            },
            path_terms=terms,
            added_terms=" ".join(dict.fromkeys(w for path in added for w in _words(path, self.reader) if w))[:PATH_TERM_CHARS],
            added_files=added[:ADDED_FILES],
        )

    def _record(self, info: RepoInfo, head: str, report: IngestReport) -> None:
        """Remember where this run ended, for the next incremental run."""
        previous = self.store.ingest_state(info.name)
        seen = (previous[1] if previous else 0) + report.commits_seen
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO ingest_state(repo, path, last_commit, commits_seen, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(repo) DO UPDATE SET path = excluded.path, last_commit = excluded.last_commit, "
                "commits_seen = excluded.commits_seen, updated_at = excluded.updated_at",
                (info.name, str(info.path.resolve()), head, seen, utc_now()),
            )
