"""`kloop wiki serve`: an opt-in resident search process, so a search typed in a shell skips kloop's start-up.

It keeps the wiki, the alias and symptom tables and the ranker loaded and answers on the socket
kloop.wiki.resident asks, one search a connection, with the lines `kloop wiki search` would print.
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
from kloop.wiki.location import default_db_path
from kloop.wiki.resident import ANSWER_TIMEOUT_S, CONNECT_TIMEOUT_S, MAX_REQUEST, read_all, socket_path
from kloop.wiki.search_command import search_lines
from kloop.wiki.store import WikiStore


def serve(db: Path | None, echo: Callable[[str], None]) -> None:
    """Answer searches of `db` on its socket until interrupted (one at a time; the wiki reopened when another
    process changed it, so an ingest that ran meanwhile is searched, learned abbreviations included)."""
    path = db if db is not None else default_db_path()
    sock = socket_path(path)
    server = _listen(sock)
    store = WikiStore(path)
    version = _data_version(store)
    served = 0
    echo(f"serving {path} on {sock} (Ctrl-C stops)")
    try:
        while True:
            conn, _ = server.accept()
            with conn:
                if _data_version(store) != version:
                    store.close()
                    store = WikiStore(path)
                    version = _data_version(store)
                try:
                    conn.sendall(_answer(conn, partial(_search, store)))
                except OSError:  # the client went away before its answer: serve the next one
                    continue
                served += 1
    finally:
        server.close()
        sock.unlink(missing_ok=True)
        store.close()
        echo(f"served {served} searches")


def _search(store: WikiStore, request: dict[str, Any]) -> list[str]:
    return search_lines(store, **request)


def _answer(conn: socket.socket, search: Callable[[dict[str, Any]], list[str]]) -> bytes:
    """One request's answer: the lines the search prints, or the one-line error it raised."""
    try:
        conn.settimeout(ANSWER_TIMEOUT_S)
        request = json.loads(read_all(conn, MAX_REQUEST))
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


def _data_version(store: WikiStore) -> int:
    """SQLite's count of commits by other connections to this database (a change means: reopen)."""
    return int(store.db.execute("PRAGMA data_version").fetchone()[0])
