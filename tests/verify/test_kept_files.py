"""The timing side's kept /proc and cgroup files: fresh on every read, never another thread's, bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kloop.verify.cgroups import KeptFiles


def _state(stat: str) -> str:
    return stat[stat.rindex(")") + 2]


def test_a_kept_file_reads_what_the_kernel_says_now() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    files = KeptFiles()
    try:
        path = f"/proc/{child.pid}/stat"
        deadline = time.monotonic() + 10
        while _state(files.read(path)) != "S" and time.monotonic() < deadline:
            time.sleep(0.01)  # the child blocks in read(stdin) once started
        assert _state(files.read(path)) == "S"
        child.send_signal(signal.SIGSTOP)  # the same descriptor must see the new state
        deadline = time.monotonic() + 10
        while _state(files.read(path)) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state(files.read(path)) == "T"
        child.send_signal(signal.SIGCONT)
        child.stdin.close()
        child.wait(timeout=10)
        with pytest.raises(OSError):  # the thread is gone: no read of whatever gets its number next
            files.read(path)
    finally:
        child.kill()
        child.wait()
        files.close()


def test_files_of_threads_gone_from_the_box_are_closed() -> None:
    files = KeptFiles()
    me = str(os.getpid())
    own = f"/proc/self/task/{os.getpid()}/schedstat"
    try:
        files.read(f"/proc/{me}/stat")
        files.read(f"/proc/{me}/schedstat")
        files.read(own)
        before = len(os.listdir("/proc/self/fd"))
        files.keep_threads([])  # none of the box's threads is left
        assert len(os.listdir("/proc/self/fd")) == before - 2  # the supervisor's own file stays open
        files.keep_threads([me])
        assert files.read(own)
    finally:
        files.close()


def test_a_boxs_thread_list_is_read_fresh_every_time() -> None:
    """cgroup v1 caches a `tasks` list per open file for a second: a kept descriptor would miss a
    thread the candidate starts inside its call (the thread watch then saw nothing)."""
    from kloop.verify.cgroups import Containment, Limits
    from kloop.verify.contain import wrap

    box = Containment.create("kept-test", Limits(pids_max=64))
    if "cpuacct" not in box.dirs:
        box.remove()
        pytest.skip(f"no writable cpuacct cgroup here ({box.missing})")
    script = "import sys, threading, time\nsys.stdin.readline()\n" \
             "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\nprint('up', flush=True)\n" \
             "sys.stdin.readline()\n"  # fmt: skip
    proc = subprocess.Popen(wrap([sys.executable, "-c", script], box, use_namespaces=False).argv,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    tasks = str(box.dirs["cpuacct"] / "tasks")
    try:
        deadline = time.monotonic() + 60
        while not box.read(tasks).split():
            assert time.monotonic() < deadline and proc.poll() is None, "the process never joined its group"
            time.sleep(0.02)
        before = set(box.read(tasks).split())
        for tid in before:
            box.read(f"/proc/{tid}/stat")  # kept from here on
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "up"
        assert len(set(box.read(tasks).split()) - before) == 1  # within the second the kernel caches a list
    finally:
        proc.kill()
        proc.wait()
        box.remove()
