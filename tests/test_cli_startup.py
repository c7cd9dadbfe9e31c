"""The commands that verify nothing start fast: none of them imports torch, numpy or an agent SDK.

Wall time is measured by bench/startup.py (p50 under 0.3 s, docs/benchmarks.md); a wall-time
assert would flake on a shared machine, so this guard checks what the time is made of: the heavy
imports (torch alone is ~1.5 s here) stay out of `--help`, `status`, `wiki search` and `task show`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "numpy", "triton", "scipy", "openai", "mcp", "safetensors"}
PROBE = """
import contextlib, io, json, sys
{prelude}
from kloop.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue()[-400:], "err": err.getvalue()[-400:],
                  "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _run(args: list[str], home: Path, prelude: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE.replace("{prelude}", prelude), *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KLOOP_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def wiki_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    db = home / "wiki.sqlite"
    subprocess.run([sys.executable, "-m", "kloop.cli", "wiki", "ingest", "cards", "--db", str(db)], cwd=ROOT,
                   check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", "HOME": str(home), "KLOOP_HOME": str(home)})
    return db


def test_commands_that_verify_nothing_import_nothing_heavy(wiki_db: Path) -> None:
    home = wiki_db.parent
    cases = {
        "--help": (["--help"], 0, "KernelWiki"),
        "status": (["status", str(home / "no-such-run")], 2, "no-such-run"),
        "wiki search": (["wiki", "search", "tensor core gemm", "--db", str(wiki_db)], 0, "card/"),
        "task show": (["task", "show", "examples/rmsnorm"], 0, "rmsnorm"),
    }
    for name, (args, code, seen) in cases.items():
        got = _run(args, home)
        assert got["code"] == code and seen in got["out"] + got["err"], (name, got["code"], got["out"], got["err"])
        assert not HEAVY & set(got["modules"]), f"kloop {name} imports {sorted(HEAVY & set(got['modules']))}"


def test_the_guard_sees_a_heavy_import(wiki_db: Path) -> None:
    """The probe's module list is the process's own: numpy imported before the command shows up."""
    got = _run(["--help"], wiki_db.parent, prelude="import numpy")
    assert got["code"] == 0 and "numpy" in HEAVY & set(got["modules"])


# --- the typer-free path (kloop.cli_fast): same bytes, same exit codes, without typer ---------------

RAW_PROBE = """
import json, os, sys
if os.environ.get("KLOOP_TEST_TYPER_ONLY"):
    import kloop.cli_fast
    kloop.cli_fast.plan = lambda args: None  # every argv through the typer app, as before the fast path
from kloop.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def _raw(args: list[str], home: Path, typer_only: bool) -> tuple[int, str, str, set[str]]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KLOOP_HOME": str(home)}
    if typer_only:
        env["KLOOP_TEST_TYPER_ONLY"] = "1"
    proc = subprocess.run([sys.executable, "-c", RAW_PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)
    err, _, modules = proc.stderr.rpartition("\nMODULES ")
    return proc.returncode, proc.stdout, err, set(json.loads(modules))


def test_fast_path_prints_what_the_typer_app_prints(wiki_db: Path, tmp_path: Path) -> None:
    """Byte for byte and exit code for exit code, on hits, guidance, JSON, filters and kloop's own errors.

    The fast path must also be the one taken: typer never loads for any of them.
    """
    home = wiki_db.parent
    bad_task = tmp_path / "bad"
    bad_task.mkdir()
    (bad_task / "definition.json").write_text('{"name": "x"}')
    db = str(wiki_db)
    cases = [
        ["wiki", "search", "tensor core gemm", "--db", db],
        ["wiki", "search", "--db", db, "-k", "3", "mfma", "--vendor", "amd", "--json"],
        ["wiki", "search", "wgmma pipeline", "--kind", "card", "--no-aliases", "--db", db],
        ["wiki", "search", "no such words zzzqqq", "--db", db],
        ["wiki", "search", "swizzle", "--db", str(home / "fresh.sqlite")],  # a new database, seeded with the cards
        ["task", "show", "examples/rmsnorm"],
        ["task", "show", "examples/rmsnorm", "--json"],
        ["task", "show", str(bad_task)],
        ["task", "show"],
        ["task", "show", "--fib-root", str(tmp_path), "--definition", "nope"],
        ["status", str(home / "no-such-run")],
        ["status", str(home / "no-such-run"), "--json"],
    ]
    for args in cases:
        fast = _raw(args, home, typer_only=False)
        slow = _raw(args, home, typer_only=True)
        assert fast[:3] == slow[:3], (args, fast[:3], slow[:3])
        assert "typer._adapters" not in fast[3] and "typer._adapters" in slow[3], args
        assert "typer" not in fast[3], args


def test_argv_the_fast_path_does_not_parse_goes_to_typer() -> None:
    """Help, unknown or repeated flags, odd values and extra words are typer's to answer (usage errors exit 2)."""
    from kloop.cli_fast import plan

    for args in (["wiki", "search", "x", "--help"], ["wiki", "search", "x", "-k", "abc"], ["wiki", "search", "x", "-k5"],
                 ["wiki", "search", "x", "-k", "05"], ["wiki", "search", "x", "--db=w.sqlite"], ["wiki", "search"],
                 ["wiki", "search", "x", "y"], ["wiki", "search", "x", "--json", "--json"], ["wiki", "search", "-x"],
                 ["wiki", "search", "x", "--vendor"], ["wiki", "search", "x", "--vendor", "-amd"], ["wiki", "search", "--", "x"],
                 ["task", "show", ""], ["task", "show", "a", "--nope"], ["status"], ["status", "a", "b"], ["wiki", "show", "x"],
                 ["--help"], []):  # fmt: skip
        assert plan(args) is None, args
    assert plan(["wiki", "search", "x", "-k", "5", "--db", "w.sqlite", "--semantic"]) is not None


def test_fast_grammar_is_the_typer_signature() -> None:
    """Every flag of each fast command is declared as its typer command declares it, and no other
    (a flag typer dropped must not be accepted here; one typer added is then parsed by typer)."""
    import typer

    from kloop import cli_fast
    from kloop.loop.commands import register
    from kloop.task.commands import app as task_app
    from kloop.wiki.commands import app as wiki_app

    root = typer.Typer()
    register(root)
    root.command("_")(lambda: None)  # two commands make a group
    commands = {("status",): typer.main.get_command(root).commands["status"],
                ("wiki", "search"): typer.main.get_command(wiki_app).commands["search"],
                ("task", "show"): typer.main.get_command(task_app).commands["show"]}
    for words, spec in cli_fast.SPECS.items():
        command = commands[words]
        declared_flags = {o for p in command.params if getattr(p, "is_flag", False) for o in p.opts}
        declared_options = {o: p.name for p in command.params if p.param_type_name == "option"
                            and not getattr(p, "is_flag", False) for o in p.opts}
        positionals = [p.name for p in command.params if p.param_type_name == "argument"]
        assert set(spec.flags) == declared_flags, words
        assert {o: name for o, (name, _) in spec.options.items()} == declared_options, words
        assert [name for name, _, _ in spec.positionals] == positionals, words
        assert [required for _, _, required in spec.positionals] == [p.required for p in command.params
                                                                     if p.param_type_name == "argument"], words


def test_a_search_on_an_existing_wiki_imports_no_yaml(wiki_db: Path) -> None:
    """The alias table comes from its cache (written by the first search, whole or not at all) and the
    cards are parsed only when a new wiki is seeded: a search on an existing wiki imports no YAML parser."""
    home = wiki_db.parent
    args = ["wiki", "search", "wgmma tma pipeline", "--db", str(wiki_db)]
    _raw(args, home, typer_only=False)  # the cache exists from here on
    code, out, err, modules = _raw(args, home, typer_only=False)
    assert code == 0 and "card/" in out, err
    heavy = {"yaml", "typer", "rich"} & {m.split(".")[0] for m in modules}
    assert not heavy, f"a search imported {sorted(heavy)}: read a shipped YAML through kloop.wiki.yamlcache.load_yaml"
    assert "kloop.wiki.cards" not in modules


def test_the_cached_alias_table_is_the_parsed_one(tmp_path: Path) -> None:
    """The table built from the cached parse classifies and expands exactly as one built from aliases.yaml
    itself, without importing PyYAML; a corrupt cache file is parsed again, never trusted or fatal."""
    probe = """
import json, sys
from importlib import resources
from kloop.wiki.aliases import load_alias_table, default_alias_table
from kloop.wiki.yamlcache import cache_dir
table = default_alias_table()
without_yaml = "yaml" not in sys.modules
text = resources.files("kloop.wiki").joinpath("aliases.yaml").read_text(encoding="utf-8")
fresh = load_alias_table(text, "aliases.yaml")
same = ([r.model_dump() for r in table.rows] == [r.model_dump() for r in fresh.rows]
        and table.repo_vendor == fresh.repo_vendor and table._expander.keys == fresh._expander.keys
        and table._classifier.keys == fresh._classifier.keys)
print(json.dumps({"same": same, "without_yaml": without_yaml, "files": sorted(p.name for p in cache_dir().iterdir())}))
"""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KLOOP_HOME": str(tmp_path)}

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    first = run()
    assert first["same"] and not first["without_yaml"] and len(first["files"]) == 1, first
    second = run()
    assert second["same"] and second["without_yaml"] and second["files"] == first["files"], second
    (tmp_path / "cache" / first["files"][0]).write_text('{"repos": {}, "aliases": [{"canon')
    third = run()
    assert third["same"] and not third["without_yaml"] and third["files"] == first["files"], third
    assert json.loads((tmp_path / "cache" / first["files"][0]).read_text())["aliases"]  # rewritten whole


def test_task_models_do_not_reread_their_source() -> None:
    """pydantic's use_attribute_docstrings re-reads a model's module source for every class it builds
    (~0.03 s of each task load here); the task models keep their docstrings as source documentation only."""
    import pydantic

    from kloop.task import schema, settings, structured

    models = [obj for module in (schema, settings, structured) for obj in vars(module).values()
              if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel) and obj.__module__ == module.__name__]
    assert len(models) > 15
    assert not [m.__name__ for m in models if m.model_config.get("use_attribute_docstrings")]


def test_status_reads_a_run_without_pydantic(tmp_path: Path) -> None:
    """`kloop status` on a run reads its lineage as plain rows (`Lineage(plain=True)`): pydantic alone costs
    0.2-0.3 s of start-up here. The same rows, spending and round in flight as the loop's own models."""
    from kloop.loop.lineage import Lineage
    from kloop.loop.record import CandidateRecord
    from kloop.loop.state import RoundState, RunPaths, save_round

    paths = RunPaths(tmp_path / "run")
    paths.private.mkdir(parents=True)
    paths.config.write_text("{}")
    lineage = Lineage(paths.lineage)
    for n, (accepted, speedup, usd) in enumerate([(True, None, None), (True, 1.7, 0.25), (False, 2.5, 0.5)]):
        lineage.add(CandidateRecord(round=n, candidate=f"r{n:03d}", stage="iterate", agent_status="ok",
                                    accepted=accepted, speedup_geomean=speedup, cost_usd=usd, tokens=100 * n,
                                    reasons=[] if accepted else ["verify: too slow"]))  # fmt: skip
    lineage.set_meta("status", "running")
    lineage.close()
    save_round(paths, RoundState(round=3, stage="iterate", parent="r001", base_commit="abc", turn=1, step="verify"))
    (paths.root / "report.html").write_text("current")  # not stale: status does not rewrite it

    got = _run(["status", str(paths.root), "--json"], tmp_path)
    assert got["code"] == 0 and "pydantic" not in got["modules"], got
    text = _run(["status", str(paths.root)], tmp_path)
    assert "best: r001 (round 1) at 1.70x" in text["out"] and "in flight: round 3 (iterate), step verify" in text["out"]
    assert "rejected: verify: too slow" in text["out"] and "$0.7500, 300 tokens" in text["out"], text["out"]

    from kloop.loop.approval import status_report
    from kloop.loop.summary import spending

    shown = json.loads(status_report(paths.root, as_json=True))
    lineage = Lineage(paths.lineage)
    try:  # the plain view agrees with the loop's models
        assert shown["spent"] == spending(lineage).model_dump(exclude={"branches"})
        assert shown["best"] == {"candidate": "r001", "round": 1, "speedup_geomean": 1.7}
        assert [r["candidate"] for r in shown["rounds"]] == [r.candidate for r in lineage.rounds()] == ["r001", "r002"]
    finally:
        lineage.close()
    assert shown["in_flight"] == {"round": 3, "stage": "iterate", "parent": "r001", "base_commit": "abc", "turn": 1,
                                  "step": "verify"}  # fmt: skip
