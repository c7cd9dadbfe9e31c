"""`kloop wiki serve`: an opt-in resident search process, so a search typed in a shell skips kloop's start-up.

A search in a fresh process spends more on starting (Python, pydantic, the alias and symptom
tables, the ranker, opening the wiki) than on ranking. A server started once keeps all of that
loaded and answers on a Unix socket beside the database (`wiki.sqlite.sock`, mode 0600).
`kloop wiki search` asks it first and prints exactly the bytes the in-process search would; when
nothing answers there (no server, a stale socket file, `--semantic`) the search runs in-process as
before. This module is what the client imports: the socket and JSON, nothing of kloop's search.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kloop.errors import BadInput

MAX_REQUEST = 1 << 16
CONNECT_TIMEOUT_S = 0.2  # a server that does not accept this fast is not there
ANSWER_TIMEOUT_S = 60.0


def default_db_path() -> Path:
    """`$KLOOP_HOME/wiki.sqlite`, KLOOP_HOME defaulting to ~/.kloop."""
    home = os.environ.get("KLOOP_HOME") or str(Path.home() / ".kloop")
    return Path(home).expanduser() / "wiki.sqlite"


def socket_path(db: Path | None) -> Path:
    """Where the server of this wiki listens: beside the database file."""
    path = (db if db is not None else default_db_path()).expanduser().absolute()
    return path.with_name(path.name + ".sock")


def ask(db: Path | None, request: dict[str, Any], echo: Callable[[str], None]) -> bool:
    """Have the server of `db` run this search and echo its lines; False when no server answers.

    A BadInput the server raised (an unknown --vendor, -k 0) is raised here, as the search would have."""
    sock = socket_path(db)
    if not sock.exists():
        return False
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_TIMEOUT_S)
        client.connect(str(sock))
        client.settimeout(ANSWER_TIMEOUT_S)
        client.sendall(json.dumps(request).encode() + b"\n")
        client.shutdown(socket.SHUT_WR)
        answer = json.loads(_read_all(client))
    except (OSError, ValueError):  # nobody there, or it went away mid-answer: search in-process
        return False
    finally:
        client.close()
    if "error" in answer:
        raise BadInput(answer.get("where", "wiki"), answer["error"])
    for line in answer["lines"]:
        echo(line)
    return True


def _read_all(conn: socket.socket, limit: int | None = None) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise ValueError("request too long")
    return b"".join(chunks)


def serve(db: Path | None, echo: Callable[[str], None], ready: Callable[[Path], None] | None = None) -> None:
    """Answer searches of `db` on its socket until interrupted (one at a time; the wiki reopened when another
    process changed it, so an ingest that ran meanwhile is searched, learned abbreviations included)."""
    from kloop.wiki.search_command import search_lines
    from kloop.wiki.store import WikiStore

    path = db if db is not None else default_db_path()
    sock = socket_path(path)
    server = _listen(sock)
    store = WikiStore(path)
    version = _data_version(store)
    echo(f"serving {path} on {sock} (Ctrl-C stops)")
    if ready is not None:
        ready(sock)
    try:
        while True:
            conn, _ = server.accept()
            with conn:
                if _data_version(store) != version:
                    store.close()
                    store = WikiStore(path)
                    version = _data_version(store)
                try:
                    conn.sendall(_answer(conn, partial(_search, search_lines, store)))
                except OSError:  # the client went away before its answer: serve the next one
                    continue
    finally:
        server.close()
        sock.unlink(missing_ok=True)
        store.close()


def _search(search_lines: Callable[..., list[str]], store: Any, request: dict[str, Any]) -> list[str]:
    return search_lines(store, **request)


def _answer(conn: socket.socket, search: Callable[[dict[str, Any]], list[str]]) -> bytes:
    """One request's answer: the lines the search prints, or the one-line error it raised."""
    try:
        conn.settimeout(ANSWER_TIMEOUT_S)
        request = json.loads(_read_all(conn, MAX_REQUEST))
        if not isinstance(request, dict):
            raise ValueError("not a JSON object")
        reply: dict[str, Any] = {"lines": search(request)}
    except BadInput as exc:
        reply = {"where": exc.where, "error": exc.what}
    except (ValueError, TypeError, OSError) as exc:
        reply = {"where": "wiki serve", "error": f"bad request: {exc}"}
    return json.dumps(reply, ensure_ascii=False).encode()


def _listen(sock: Path) -> socket.socket:
    """A socket only this user can reach; a live server already there is an error, a stale file is replaced."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(CONNECT_TIMEOUT_S)
        probe.connect(str(sock))
        raise BadInput(sock, "a wiki server already answers here")
    except OSError:
        sock.unlink(missing_ok=True)
    finally:
        probe.close()
    sock.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(sock))
    except OSError as exc:
        server.close()
        raise BadInput(sock, f"cannot listen here: {exc.strerror}") from None
    finally:
        os.umask(old)
    server.listen(16)
    return server


def _data_version(store: Any) -> int:
    """SQLite's count of commits by other connections to this database (a change means: reopen)."""
    return int(store.db.execute("PRAGMA data_version").fetchone()[0])
