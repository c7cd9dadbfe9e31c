"""Run one `kloop` command in this process and record every call the sandboxes' seccomp filters refused.

Why: issue 29's filter denies calls a kernel never needs (bpf, perf_event_open, setns, mount, the
SysV IPC calls, ...). Nobody has seen it on a GPU yet: if CUDA's driver, a CUDA library or Triton's
compiler makes one of those calls inside the box, an honest candidate is rejected (`sandbox_policy`),
and the verdict's detail shows at most three refusals. This wrapper lets kloop run unchanged, but
registers each box's `seccomp.Listener` (the supervisor's end of the user-notification fd) and, when
the command ends, prints every refusal the kernel reported, in full: those before the box was armed
(the harness's own start-up, torch's and CUDA's initialisation: never held against a candidate) and
those after (a build or candidate code: these reject it). It also says plainly when no listener
existed, so a run without the filter cannot pass for a clean one.

    python3 bench/gpu_seccomp.py --record OUT.json -- verify TASK SOLUTION --device cuda --json V.json

Exit status: kloop's own. The record is JSON: {"argv", "rc", "seccomp_available", "listeners":
[{"box", "before": [...], "refused": [...], "count"}], "verdict": {status, reasons, sandbox_policy}}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))


def _install_recorder() -> list[Any]:
    """Wrap the listener and the box so that every listener is kept, with its box's label."""
    from kloop.verify import process, seccomp

    listeners: list[Any] = []
    original_init = seccomp.Listener.__init__
    original_take = process.SandboxProcess._take_listener

    def init(self: Any, fd: int) -> None:
        original_init(self, fd)
        self.box_label = "?"
        listeners.append(self)

    def take(self: Any) -> None:
        original_take(self)
        if self.listener is not None:
            self.listener.box_label = self.label

    seccomp.Listener.__init__ = init  # type: ignore[method-assign]
    process.SandboxProcess._take_listener = take  # type: ignore[method-assign]
    return listeners


def _listener_record(listener: Any) -> dict[str, Any]:
    """Everything the listener kept (its lists outlive `close`), read under its lock."""
    with listener._lock:  # noqa: SLF001 -- the supervisor's own object, read after the run
        before = [{"call": r.call, "pid": r.pid} for r in listener.before]
        refused = [{"call": r.call, "pid": r.pid} for r in listener.refused]
        count = listener.count
    return {"box": listener.box_label, "before": before, "refused": refused, "count": count}


def _verdict(argv: list[str]) -> dict[str, Any] | None:
    """The status, reasons and sandbox_policy detail of the verdict the command wrote with --json."""
    if "--json" not in argv:
        return None
    path = Path(argv[argv.index("--json") + 1])
    if not path.is_file():
        return None
    verdict = json.loads(path.read_text())
    policy = [c for c in verdict.get("checks", []) if c.get("name") == "sandbox_policy"]
    return {
        "status": verdict.get("status"),
        "reasons": verdict.get("reasons", []),
        "sandbox_policy": policy[0] if policy else None,
    }


def _report(record: dict[str, Any]) -> None:
    """Print the evidence plainly: filter on or not, then every refused call, then the conclusion."""
    print("\n== seccomp evidence")
    if not record["seccomp_available"]:
        print(
            "SECCOMP OFF: pyseccomp or libseccomp is missing here; the boxes ran with no filter "
            "(sandbox_policy says 'seccomp: none'). This run says NOTHING about refused calls."
        )
    elif not record["listeners"]:
        print(
            "NO LISTENER: no box handed a seccomp user-notification fd to the supervisor (libseccomp "
            "API < 5, or no box started). Refused calls, if any, were not observed."
        )
    verdict = record["verdict"]
    if verdict and verdict.get("sandbox_policy"):
        policy = verdict["sandbox_policy"]
        print(f"sandbox_policy passed={policy.get('passed')}: {policy.get('detail', '')[:600]}")
    total_after = 0
    for item in record["listeners"]:
        total_after += item["count"]
        print(
            f"box {item['box']}: {len(item['before'])} refused before arming (harness start-up), "
            f"{item['count']} after arming (build / candidate code)"
        )
        for when, rows in (("before", item["before"]), ("after", item["refused"])):
            for row in rows:
                print(f"   REFUSED {when:6s} {row['call']} (pid {row['pid']})")
    status = verdict.get("status") if verdict else None
    if record["listeners"]:
        refused_any = any(item["before"] or item["refused"] for item in record["listeners"])
        print(
            f"seccomp: {len(record['listeners'])} listener(s), "
            f"{'REFUSED CALLS RECORDED (above)' if refused_any else 'no call refused'}; "
            f"{total_after} after arming; verdict {status}"
        )
        if total_after and status != "PASSED":
            print(
                "HONEST CANDIDATE REJECTED with refused calls after arming: the calls above are the evidence "
                "(a call CUDA or Triton needs is on the deny list)"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True, help="Write the refusals here (JSON).")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the kloop command line.")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        print("gpu_seccomp: give the kloop command after --", file=sys.stderr)
        return 2
    from kloop import cli
    from kloop.verify import seccomp

    listeners = _install_recorder()
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # typer's usage errors
        rc = exc.code if isinstance(exc.code, int) else 1
    record = {
        "argv": argv,
        "rc": rc,
        "seccomp_available": seccomp.available(),
        "listeners": [_listener_record(item) for item in listeners],
        "verdict": _verdict(argv),
    }
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    _report(record)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
