"""Topic pages: one deterministic page per technique label, a timeline across repositories.

For every technique the alias table assigned to git entries, the page lists per repository the
commit that introduced it (the oldest entry carrying the label) and the commits that reworked
it (later entries that name the technique in their title or create kernel files), each with its
date, id, PR and URL. No model is involved: the same wiki always gives the same pages. Pages are
stored as `doc` entries `topic/<technique>`, read with `kloop wiki show topic/<technique>`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from kloop.wiki.aliases import AliasTable
from kloop.wiki.schema import Confidence, EntryKind, Source, WikiEntry
from kloop.wiki.store import WikiStore

# Reworks listed per repository (the introduction is always listed).
REWORKS_PER_REPO = 12


@dataclass(frozen=True)
class Event:
    """One commit on a technique's timeline."""

    date: str
    entry_id: str
    repo: str
    title: str
    pr: int | None
    url: str | None
    vendor: str
    adds_files: bool


def _events(store: WikiStore) -> dict[str, list[Event]]:
    """Git entries per technique label, oldest first (ties broken by id: deterministic)."""
    by_tech: dict[str, list[Event]] = defaultdict(list)
    sql = (
        "SELECT id, repo, title, date, vendor, pr, label_list, source_json FROM entries "
        "WHERE kind IN ('pr', 'commit') AND date IS NOT NULL"
    )
    for entry_id, repo, title, when, vendor, pr, labels, source in store.db.execute(sql):
        label_list = json.loads(labels)
        if "git:history-only" in label_list:  # build, CI, tooling: no technique's timeline
            continue
        url = json.loads(source).get("url")
        adds = "git:adds-kernel-files" in label_list and "git:mechanical" not in label_list
        for label in label_list:
            if label.startswith("tech:"):
                by_tech[label[5:]].append(Event(when, entry_id, repo or "?", title, pr, url, vendor, adds))
    for events in by_tech.values():
        events.sort(key=lambda e: (e.date, e.entry_id))
    return by_tech


def _timeline(technique: str, events: list[Event], aliases: AliasTable) -> list[tuple[str, Event]]:
    """(role, event): per repo the introduction, then reworks that name the technique or create files."""
    out: list[tuple[str, Event]] = []
    per_repo: dict[str, int] = defaultdict(int)
    for event in events:
        if event.repo not in per_repo:
            out.append(("introduced", event))
            per_repo[event.repo] = 0
            continue
        named = technique in aliases.classify(event.title).techniques
        if (named or event.adds_files) and per_repo[event.repo] < REWORKS_PER_REPO:
            out.append(("reworked", event))
            per_repo[event.repo] += 1
    return sorted(out, key=lambda item: (item[1].date, item[1].entry_id))


def topic_page(technique: str, events: list[Event], aliases: AliasTable) -> WikiEntry:
    """The page for one technique: a markdown timeline with provenance on every line."""
    timeline = _timeline(technique, events, aliases)
    repos = sorted({e.repo for _, e in timeline})
    vendors = {e.vendor for _, e in timeline} - {"any"}
    lines = [
        f"# {technique}: timeline across {len(repos)} repositories",
        "",
        f"{len(events)} commits carry this technique label. First in each repository:",
    ]
    for role, event in timeline:
        if role == "introduced":
            lines.append(f"- {event.repo}: {event.date[:10]} [{event.entry_id}] {event.title}")
    lines += ["", "## Timeline (introduced and reworked)", ""]
    for role, event in timeline:
        pr = f" PR #{event.pr}" if event.pr else ""
        where = f" <{event.url}>" if event.url else ""
        lines.append(f"- {event.date[:10]} {role:10} [{event.entry_id}]{pr} {event.title}{where}")
    first = timeline[0][1] if timeline else None
    return WikiEntry(
        id=f"topic/{technique}", kind=EntryKind.doc, title=f"Topic: {technique} (timeline across {', '.join(repos)})",
        body="\n".join(lines), techniques=[technique], tags=["topic"],
        vendor=vendors.pop() if len(vendors) == 1 else "any",
        source=Source(repo="kloop-topics", paths=[e.entry_id for _, e in timeline][:50],
                      date=first.date if first else None, title=f"timeline of {technique}"),
        confidence=Confidence.inferred,
        # deterministic: the newest commit on the page, not the wall clock
        captured_at=max((e.date for _, e in timeline), default="1970-01-01T00:00:00+00:00"),
    )


def build_topics(store: WikiStore) -> list[WikiEntry]:
    """Every technique's page, written to the store (replacing older pages); the pages in name order."""
    pages = [topic_page(t, events, store.aliases) for t, events in sorted(_events(store).items())]
    store.add(pages, replace=True)
    return pages
