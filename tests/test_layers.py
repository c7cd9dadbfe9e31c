"""Data flows one way: each kloop package imports only from the layers below it.

The layers are data (lowest first); a package may import its own modules and any package of
a lower layer, never one of its own layer or above. Function-level (lazy) imports count too:
an arrow is an arrow whether it runs at import time or later. `kloop.loop` sits near the
top: nothing but the command line imports the orchestrator. Each `<pkg>/commands.py` is part of
the command line (registered by cli.py), so it may wire any layer, as `kloop doctor --agents` does.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "kloop"

LAYERS: list[set[str]] = [
    {"errors"},
    {"expr", "findings", "lazy", "migrations", "progress", "signals"},  # shared leaves
    {"device"},
    {"task"},
    {"builder"},
    {"verify"},
    {"pool"},  # runs verifications (local processes or Ray actors) for the loop and `kloop bench`
    {"wiki"},
    {"profile"},  # reads the wiki for fixes
    {"route"},
    {"agents", "skills"},  # the tuner agent searches with route/; skills are data plus their installer
    {"report", "export"},  # read finished runs
    {"loop"},
    {"cli", "cli_fast", "mcp", "__init__"},
]


def layer_of(package: str) -> int:
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise KeyError(f"package kloop.{package} is in no layer: add it to LAYERS")


def _package(path: Path, root: Path) -> str:
    """The package a module belongs to; `<pkg>/commands.py` is the command line's (cli.py registers it)."""
    rel = path.relative_to(root)
    if len(rel.parts) == 2 and rel.name == "commands.py":
        return "cli"
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def uphill_imports(root: Path) -> list[str]:
    """Every `kloop.X` import from a package at or above X's layer, as `file:line: a -> b`."""
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = _package(path, root)
        for line, module in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            if parts[0] != "kloop" or len(parts) < 2 or parts[1] == source:
                continue
            if layer_of(parts[1]) >= layer_of(source):
                problems.append(f"{path.relative_to(root)}:{line}: {source} -> {parts[1]}")
    return problems


def module_graph(root: Path) -> dict[str, set[str]]:
    """kloop module -> kloop modules it imports (package __init__ files left out: re-exports are not arrows)."""
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts): p for p in root.rglob("*.py")
               if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected groups of more than one module (Tarjan), lazy imports included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(frozenset(group))

    for node in graph:
        if node not in index:
            visit(node)
    return cycles


def test_no_module_imports_itself_back() -> None:
    cycles = [sorted(c) for c in import_cycles(module_graph(SRC))]
    assert not cycles, f"modules importing each other: {cycles}"


def test_the_cycle_check_finds_a_lazy_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "kloop" / "verify"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from kloop.verify.b import g\n")
    (pkg / "b.py").write_text("from kloop.verify import a\n")
    (pkg / "c.py").write_text("from kloop.verify.a import f\n")
    assert import_cycles(module_graph(tmp_path / "kloop")) == [frozenset({"kloop.verify.a", "kloop.verify.b"})]


def test_kloop_imports_flow_one_way() -> None:
    assert not uphill_imports(SRC), "uphill imports:\n" + "\n".join(uphill_imports(SRC))


def test_every_package_has_a_layer() -> None:
    packages = {_package(p, SRC) for p in SRC.rglob("*.py")}
    assert {"task", "verify", "loop", "wiki", "profile"} <= packages
    for package in packages:
        layer_of(package)


def test_the_checker_catches_an_uphill_and_a_sideways_import(tmp_path: Path) -> None:
    for rel, text in {"task/__init__.py": "", "task/x.py": "def f():\n    from kloop.loop import campaign\n",
                      "wiki/__init__.py": "", "wiki/y.py": "import kloop.profile.schema\nfrom kloop.task import x\n",
                      "route/__init__.py": "", "route/z.py": "from kloop.agents.tuner import instantiate\n",
                      "agents/__init__.py": "", "agents/t.py": "from kloop.route import z\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert uphill_imports(tmp_path) == ["route/z.py:1: route -> agents", "task/x.py:2: task -> loop",
                                        "wiki/y.py:1: wiki -> profile"]


CONCRETE_AGENTS = {"tuner", "replay", "rules", "claude", "codex", "kimi", "kimi_legacy", "openai_agent"}


def test_the_loop_names_no_concrete_agent() -> None:
    """The loop gets its agents through `kloop.agents.get_agent` and the `Agent` protocol only."""
    found = [f"{path.relative_to(SRC)}:{line}: {module}"
             for path in sorted((SRC / "loop").rglob("*.py"))
             for line, module in _imported(ast.parse(path.read_text(encoding="utf-8")))
             if module.startswith("kloop.agents.") and module.split(".")[2] in CONCRETE_AGENTS]
    assert not found, found
