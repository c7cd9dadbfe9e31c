"""The loop on a campaign of cosmetic rewrites: identical code must never be accepted as progress.

    .venv/bin/python bench/cosmetic_campaign.py [--task examples/rmsnorm] [--rounds 18] [--out DIR]

Every round re-submits the task's baseline with its local variables renamed and a comment added:
the same operations, so the same speed. It runs `kloop run` through the CLI with the replay writer
and the rules reviewer (the iterate stage only), exactly as a user would, then reads the run's
`summary.json`: no round may be accepted. This is the check that, before issue #11, accepted 3 of
18 such rounds (at 1.06x, 1.11x and 1.20x) and let one of them become the best.
"""

from __future__ import annotations

import argparse
import io
import json
import keyword
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def assigned_names(source: str) -> set[str]:
    """Names bound by plain assignment or a for loop inside the source (its local variables)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.For) else []
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def reword(source: str, round_no: int) -> str:
    """The same program with every local variable renamed and a comment on top: cosmetic only."""
    local = {n for n in assigned_names(source) if not keyword.iskeyword(n)}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in local:
            tok = tok._replace(string=f"{tok.string}_r{round_no}")
        out.append(tok)
    return f"# cosmetic rewrite {round_no}: locals renamed, nothing else\n" + tokenize.untokenize(out)


def campaign(task: Path, rounds: int, where: Path) -> Path:
    baseline = task / "baseline"
    meta = json.loads((baseline / "solution.json").read_text())
    sources = [s["path"] for s in meta.get("sources", [])]
    lines = []
    for n in range(1, rounds + 1):
        files = {path: reword((baseline / path).read_text(), n) if path.endswith(".py") else (baseline / path).read_text()
                 for path in sources}  # fmt: skip
        files["solution.json"] = json.dumps({**meta, "name": f"{meta['name']}_reworded_{n}"}, indent=2)
        lines.append({"claim": f"cosmetic rewrite {n}: renamed locals (should be exactly as fast)", "files": files})
    path = where / "cosmetic.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=REPO / "examples" / "rmsnorm")
    parser.add_argument("--rounds", type=int, default=18)
    parser.add_argument("--out", type=Path, help="run directory (default: a temp dir)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kloop-cosmetic-"))
    out = args.out or work / "run"
    replay = campaign(args.task, args.rounds, work)
    t0 = time.perf_counter()
    cmd = [str(Path(sys.executable).parent / "kloop"), "run", str(args.task), "--writer", f"replay:{replay}",
           "--reviewer", "rules", "--stages", "iterate", "--rounds", str(args.rounds), "--stall-after", str(args.rounds), "--device", "cpu",
           "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    summary = json.loads((out / "summary.json").read_text())
    rounds = summary["rounds"]
    accepted = [r for r in rounds if r["accepted"]]
    print(f"kloop run exit {proc.returncode}; {len(rounds)} cosmetic rounds in {took:.0f} s; accepted {len(accepted)}")
    print("| round | verify | speedup over the baseline | accepted | reason |")
    print("| --- | --- | --- | --- | --- |")
    for r in rounds:
        print(f"| {r['round']} | {r['verify_status']} | {r.get('speedup_geomean') or '-'} | {r['accepted']} | "
              f"{(r.get('reasons') or [''])[0][:110]} |")
    if proc.returncode not in (0, 1):
        print(proc.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
