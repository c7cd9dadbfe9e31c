"""Integrity hashes the task once per check and still catches a changed sealed file."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from kloop.task.load import load_task
from kloop.verify.checks import CheckBook
from kloop.verify.integrity import sha256_file, task_fingerprint, verify_integrity

RELU = Path(__file__).parent / "tasks" / "relu_unit"
OPENED: list[str] = []
RECORDING = [False]


def _count_opens(event: str, args: tuple) -> None:
    if RECORDING[0] and event == "open" and isinstance(args[0], str | Path):
        OPENED.append(str(args[0]))


sys.addaudithook(_count_opens)  # audit hooks cannot be removed: it records only inside this test


def test_each_task_file_is_read_once_and_the_fingerprint_is_returned(tmp_path: Path) -> None:
    shutil.copytree(RELU, tmp_path / "task")
    task = load_task(tmp_path / "task")
    definition = str(task.definition_path)
    manifest = {"definition.json": sha256_file(task.definition_path),
                "workloads.jsonl": sha256_file(task.workloads_path)}
    for given in (None, manifest):
        OPENED.clear()
        book = CheckBook()
        RECORDING[0] = True
        try:
            fingerprint = verify_integrity(task, given, book)
        finally:
            RECORDING[0] = False
        assert OPENED.count(definition) == 1, OPENED
        assert fingerprint == task_fingerprint(task) and book.ok("integrity")


def test_a_changed_sealed_file_fails_integrity(tmp_path: Path) -> None:
    shutil.copytree(RELU, tmp_path / "task")
    task = load_task(tmp_path / "task")
    manifest = {"definition.json": sha256_file(task.definition_path)}
    before = task_fingerprint(task)
    task.definition_path.write_text(task.definition_path.read_text() + "\n")
    book = CheckBook()
    assert verify_integrity(task, manifest, book) != before
    assert not book.ok("integrity")
