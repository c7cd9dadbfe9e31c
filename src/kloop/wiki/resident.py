"""The client side of `kloop wiki serve` (kloop.wiki.server): ask a resident search before starting one.

A search in a fresh process spends more on starting (Python, pydantic, the alias and symptom
tables, the ranker, opening the wiki) than on ranking. A server started once keeps all of that
loaded and answers on a Unix socket beside the database (`wiki.sqlite.sock`, mode 0600).
`kloop wiki search` asks it first and prints exactly the bytes the in-process search would; when
nothing answers there (no server, a stale socket file, `--semantic`) the search runs in-process as
before. This module is what the client imports: the socket and JSON, nothing of kloop's search.
The server (kloop.wiki.server) speaks the same protocol: one JSON request a connection, one answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.wiki.location import default_db_path

MAX_REQUEST = 1 << 16
CONNECT_TIMEOUT_S = 0.2  # a server that does not accept this fast is not there
ANSWER_TIMEOUT_S = 60.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes with its terminator


def socket_path(db: Path | None) -> Path:
    """Where the server of this wiki listens: beside the database file, or, where that path is too long for a
    Unix socket (108 bytes on Linux), under the temporary directory by a hash of the database's path."""
    path = (db if db is not None else default_db_path()).expanduser().absolute()
    beside = path.with_name(path.name + ".sock")
    if len(os.fsencode(beside)) < MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"kloop-wiki-{os.getuid()}-{digest}.sock"


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
        answer = json.loads(read_all(client))
    except (OSError, ValueError):  # nobody there, or it went away mid-answer: search in-process
        return False
    finally:
        client.close()
    if "error" in answer:
        raise BadInput(answer.get("where", "wiki"), answer["error"])
    for line in answer["lines"]:
        echo(line)
    return True


def read_all(conn: socket.socket, limit: int | None = None) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise ValueError("request too long")
    return b"".join(chunks)
