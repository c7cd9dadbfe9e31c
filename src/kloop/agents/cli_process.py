"""One runner for every agent CLI: a clean environment, its own process group, killed whole at its limit.

The traps this closes: `codex exec` waits on stdin (stdin is /dev/null); a hung model leaves the
CLI waiting forever (the whole process tree is killed at the limit, stragglers included); the host's
API keys and kloop's seed secrets must not reach the agent (the environment is built from an allow
list, never inherited). The CLI's stdout is saved verbatim as the transcript before anything parses it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

if TYPE_CHECKING:
    from kloop.agents.gateway import Gateway

from kloop.agents.audit import audited, denials_in_log, forbidden
from kloop.agents.base import AgentRequest, AgentResult, AgentStatus, Claim, Role, parse_verdict

# Only these host variables reach an agent CLI; everything else (keys, KLOOP_SEED_SECRET*) is dropped.
_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR")
_KILL_GRACE_S = 3.0


@dataclass
class CliOutcome:
    """What one CLI run left: exit status, whether it was killed, its transcript and parsed events."""

    returncode: int | None
    timed_out: bool
    duration_s: float
    transcript: Path
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)
    left_behind: list[int] = field(default_factory=list)  # pids still alive after the kill (should be none)


def agent_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment an agent CLI gets: a few host basics, its own HOME and TMPDIR, and `extra`."""
    env = {k: os.environ[k] for k in _PASS_THROUGH if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # kloop's own interpreter first: its Python (with torch) is on the agent's read allow-list,
    # whereas shims under the host home (pyenv, ~/.local/bin) are not.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update({"HOME": str(home), "TMPDIR": str(tmp), "TERM": "dumb", "NO_COLOR": "1",
                # its own kloop home: kloop's (build cache, wiki, other runs) is not readable to it, and
                # `kloop mcp` / skill commands it starts keep their caches here
                "KLOOP_HOME": str(home / ".kloop"),
                "PYTHONDONTWRITEBYTECODE": "1",  # no refused __pycache__ writes in read-only installs
                "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_DATA_HOME": str(home / ".local" / "share")})
    env.update(extra or {})
    leaked = [k for k in env if k.startswith("KLOOP_SEED_SECRET")]
    for key in leaked:  # never, whatever a caller passed
        del env[key]
    return env


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every JSON object line of a transcript; other lines (banners, warnings) are skipped."""
    events: list[dict[str, Any]] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return events
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            events.append(data)
    return events


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _kill_all(proc: subprocess.Popen[bytes], known: list[psutil.Process]) -> list[int]:
    """TERM then KILL the process group and every descendant seen; return pids that survived."""
    targets = {p.pid: p for p in [*known, *_tree(proc.pid)]}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, sig)
        for p in targets.values():
            with contextlib.suppress(psutil.Error):
                p.send_signal(sig)
        try:
            proc.wait(_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            continue
        _, alive = psutil.wait_procs(list(targets.values()), timeout=_KILL_GRACE_S)
        if not alive:
            break
    _, alive = psutil.wait_procs(list(targets.values()), timeout=0.1)
    return [p.pid for p in alive]


def run_cli(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], time_limit_s: float, transcript: Path,
    stdin: Path | None = None,
) -> CliOutcome:
    """Run `argv` once: stdin /dev/null (or the `stdin` file), stdout to `transcript` verbatim, killed whole
    at the limit."""
    transcript.parent.mkdir(parents=True, exist_ok=True)
    err_path = transcript.with_name(transcript.name + ".stderr")
    started = time.monotonic()
    with open(transcript, "wb") as out, open(err_path, "wb") as err, \
            open(stdin or os.devnull, "rb") as given:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=given, stdout=out,
                                stderr=err, start_new_session=True)
        seen: dict[int, psutil.Process] = {}
        timed_out = False
        deadline = started + max(1.0, time_limit_s)
        while proc.poll() is None:
            if time.monotonic() >= deadline:
                timed_out = True
                break
            seen.update((p.pid, p) for p in _tree(proc.pid))  # kept: a re-parented child is still ours
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(1.0, max(0.05, deadline - time.monotonic())))
        left = _kill_all(proc, list(seen.values()))  # also after a clean exit: nothing it started outlives it
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    return CliOutcome(returncode=None if timed_out else proc.returncode, timed_out=timed_out,
                      duration_s=time.monotonic() - started, transcript=transcript, stderr=stderr,
                      events=read_jsonl(transcript), left_behind=left)


def tools_prefix() -> Path:
    """Where setup installs the pinned CLIs: `$KLOOP_TOOLS`, else `.tools/` of the source checkout."""
    if os.environ.get("KLOOP_TOOLS"):
        return Path(os.environ["KLOOP_TOOLS"])
    import kloop

    return Path(kloop.__file__).resolve().parents[2] / ".tools"


def find_program(name: str, env_var: str) -> Path | None:
    """`$KLOOP_<NAME>_BIN`, then kloop's tools prefix, then PATH."""
    explicit = os.environ.get(env_var)
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    local = tools_prefix() / "npm" / "node_modules" / ".bin" / name
    if local.exists():
        return local
    found = shutil.which(name)
    return Path(found) if found else None


def version_of(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """First line of `PROGRAM --version`, or None when it does not run."""
    try:
        proc = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=dict(env) if env else None)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip().splitlines()
    return text[0] if proc.returncode == 0 and text else None


# --- what every CLI adapter shares ----------------------------------------------------------

# Refusals as the CLIs and the kernel word them; any tool output matching one is a denial,
# whatever the exit code says (every CLI exits 0 after a refused call).
DENIAL_PATTERNS: tuple[str, ...] = (
    r"Read-only file system",
    r"Permission denied",
    r"Operation not permitted",
    r"No such tool available",
    r"Tool [\"`]?[A-Za-z_]+[\"`]? not found",
    r"permission to use \w+ has not been granted",
    r"requires approval",
)
_DENIAL = re.compile("|".join(DENIAL_PATTERNS), re.IGNORECASE)


def denials_in(texts: Sequence[str], tool: str = "tool") -> list[str]:
    """One line per tool output that reads as a refusal (first matching line, shortened)."""
    found: list[str] = []
    for body in texts:
        for line in str(body).splitlines():
            if _DENIAL.search(line):
                found.append(f"{tool}: {line.strip()[:200]}")
                break
    return found


@dataclass(frozen=True)
class Endpoint:
    """Where an adapter's model lives; read from `KLOOP_<AGENT>_{BASE_URL,API_KEY,MODEL}`.

    Explicit on purpose: the host's own ANTHROPIC_API_KEY / OPENAI_API_KEY never reach a CLI.
    """

    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    price: tuple[float, float] | None = None  # USD per 1M input, output tokens (the gateway's dollar account)

    @classmethod
    def from_env(cls, agent: str) -> Endpoint:
        key = f"KLOOP_{agent.upper().replace('-', '_')}_"
        return cls(base_url=os.environ.get(key + "BASE_URL") or None,
                   api_key=os.environ.get(key + "API_KEY") or None, model=os.environ.get(key + "MODEL") or None,
                   price=parse_price(os.environ.get(key + "PRICE")))


def parse_price(text: str | None) -> tuple[float, float] | None:
    """`"3,15"` -> (3.0, 15.0): USD per million input and output tokens; None when unset or malformed."""
    if not text:
        return None
    try:
        given, taken = (float(x) for x in text.split(","))
    except ValueError:
        return None
    return given, taken


@dataclass
class Invocation:
    """The command an adapter built for one call, and what it needs to read the answer."""

    argv: list[str]
    env: dict[str, str]
    contained: bool = False  # True when the adapter wants kloop's containment around argv
    stdin: Path | None = None  # a prompt too long for one argument, fed on stdin instead of /dev/null
    last_message: Path | None = None  # a file the CLI writes its final answer to (codex -o)


class CliAgent(ABC):
    """An `Agent` that runs one real CLI per call; subclasses build the command and read the result."""

    name: str = "cli"
    default_base_url: str = "https://api.openai.com/v1"  # where the real model lives when none is set

    def __init__(self, endpoint: Endpoint | None = None, program: Path | None = None) -> None:
        self.endpoint = endpoint or Endpoint.from_env(self.name)
        self.program = program

    @abstractmethod
    def program_argv(self) -> list[str] | None:
        """How to start this CLI here (None when it is not installed)."""

    def require_program(self) -> list[str]:
        argv = self.program_argv()
        if argv is None:
            raise FileNotFoundError(f"{self.name}: CLI not found (install it with scripts/agent-clis.sh, "
                                    f"or set KLOOP_{self.name.upper().replace('-', '_')}_BIN)")
        return argv

    @abstractmethod
    def invocation(self, request: AgentRequest, home: Path) -> Invocation:
        """argv and environment for this request (role decides tools and sandbox)."""

    @abstractmethod
    def interpret(self, request: AgentRequest, outcome: CliOutcome, inv: Invocation, home: Path) -> AgentResult:
        """Final message, tokens, cost and denials from the CLI's own output."""

    def run(self, request: AgentRequest) -> AgentResult:
        """One call: a fresh home, a gateway holding the key and the budget, the CLI contained and killed
        whole at the call's deadline."""
        home = Path(tempfile.mkdtemp(prefix=f"kloop-{self.name}-home-"))
        transcript = _transcript_path(request, self.name)
        try:
            if not read_only_role(request):
                open_for_writer(request.workspace)
            with open_gateway(self.endpoint, self.default_base_url, request, transcript, home / "gateway.sock") as gw:
                through = copy.copy(self)  # the CLI sees the gateway and its call token, never the key
                through.endpoint = replace(self.endpoint, base_url=gw.client_url, api_key=gw.token)
                inv = through.invocation(request, home)
                argv = inv.argv
                audit_log = transcript.with_name(transcript.stem + ".audit.log")
                if inv.contained:
                    argv = audited(contain_agent(argv, request, home, self.program_argv() or [],
                                                 gateway=(gw.port, home / "gateway.sock")), audit_log)
                outcome = run_cli(argv, cwd=request.workspace, env=inv.env, stdin=inv.stdin,
                                  time_limit_s=_own_limit(request.time_limit_s), transcript=transcript)
            seen = denials_in_log(audit_log, request.workspace)
            refused = [d.line() for d in forbidden(seen, allowed_roots(request, home, self.program_argv() or []))]
            if outcome.timed_out:  # what it spent before the kill still counts against the run's budget
                return gateway_account(AgentResult(
                    status=AgentStatus.timed_out, transcript_path=transcript, contained_denials=refused,
                    final_message=f"{self.name}: killed at its {request.time_limit_s:g}s limit"), gw)
            result = gateway_account(through.interpret(request, outcome, inv, home), gw)
            return result.model_copy(update={"contained_denials": refused})
        finally:
            shutil.rmtree(home, ignore_errors=True)


def open_gateway(endpoint: Endpoint, default_base_url: str, request: AgentRequest, transcript: Path,
                 uds: Path | None = None) -> Gateway:
    """The call's gateway: the real endpoint and key behind it, the request's budgets on it, its log
    next to the transcript."""
    from kloop.agents.gateway import Gateway, Price

    price = Price(input=endpoint.price[0], output=endpoint.price[1]) if endpoint.price else None
    return Gateway(endpoint.base_url or default_base_url, endpoint.api_key, usd_limit=request.cost_limit_usd,
                   token_limit=request.token_limit, price=price, deadline_s=request.time_limit_s,
                   log_path=transcript.with_name(transcript.stem + ".gateway.jsonl"), uds=uds)


BUDGET_REFUSED = "kloop gateway refused a model call"


def gateway_account(result: AgentResult, gw: Gateway) -> AgentResult:
    """Tokens and dollars as the gateway counted them (the CLI's own figures are its word).

    A call whose model request the gateway refused for the budget is `over_budget`, with the gateway's
    reason as its message, however the agent reacted to the refusal: Claude Code and Codex exit with an
    API error, Kimi and kloop's `openai:` agent report a 403. Read from kloop's own account, never from
    the agent's wording, so the loop records "budget spent", not a crash. A call killed at its deadline
    stays `timed_out`; its spending still counts.
    """
    update: dict[str, Any] = {"tokens": gw.tokens or result.tokens, "cost_usd": round(gw.usd, 6)}
    reason = gw.account.budget_refusal
    if reason is not None and result.status in (AgentStatus.completed, AgentStatus.crashed):
        update["status"] = AgentStatus.over_budget
        update["final_message"] = f"{BUDGET_REFUSED}: {reason}"
    return result.model_copy(update=update)


# Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN); longer prompts go through a file.
MAX_PROMPT_ARG = 100_000


def prompt_file(request: AgentRequest, home: Path) -> Path | None:
    """The prompt written to `HOME/prompt.md` when it is too long to pass as an argument, else None."""
    if len(request.prompt.encode()) <= MAX_PROMPT_ARG:
        return None
    path = home / "prompt.md"
    path.write_text(request.prompt, encoding="utf-8")
    return path


def pointer_prompt(path: Path) -> str:
    """For a CLI that takes its prompt only as an argument: where the full prompt is."""
    return (f"Your full instructions are in the file {path} (outside the workspace, too long to pass here). "
            "Read all of it first, then follow it exactly.")


def read_only_role(request: AgentRequest) -> bool:
    return request.read_only or request.role is Role.reviewer


def finish(request: AgentRequest, outcome: CliOutcome, final: str, *, ok: bool, tokens: int | None,
           cost: float | None, denials: list[str], structured: str | None = None) -> AgentResult:
    """The common tail: status from the run, verdict for reviewers, claim for writers."""
    status = AgentStatus.completed if ok else AgentStatus.crashed
    if not ok and not final:
        final = (outcome.stderr.strip().splitlines() or [f"exit status {outcome.returncode}"])[-1][:500]
    verdict = parse_verdict(structured or final) if read_only_role(request) else None
    return AgentResult(status=status, final_message=final, verdict=verdict,
                       claim=None if read_only_role(request) else Claim(text=final),
                       transcript_path=outcome.transcript, tokens=tokens, cost_usd=cost,
                       permission_denials=denials)


WRITER_DIRS = ("solution", "notes")


def kloop_mcp_config() -> dict[str, Any] | None:
    """`{"mcpServers": {"kloop": ...}}` starting `kloop mcp` (verify, profile, wiki) for a writer's CLI.

    The wiki is the host's (`--db`, read-only to a contained writer); the server inherits the
    agent's environment, so its build cache lands in the agent's own home.
    """
    exe = Path(sys.executable).with_name("kloop")
    found = str(exe) if exe.exists() else shutil.which("kloop")
    if found is None:
        return None
    from kloop.wiki import default_db_path

    db = default_db_path()
    args = ["mcp", *(["--db", str(db)] if db.exists() else [])]
    return {"mcpServers": {"kloop": {"command": found, "args": args}}}


def open_for_writer(workspace: Path) -> None:
    """Make the writer's own files writable by their owner.

    The workspace's solution starts as a copy of the sealed (mode 0444) baseline; root ignores that,
    but a CLI whose sandbox maps the agent to an unprivileged user (Codex) or drops capabilities
    (kloop's containment) would be refused on its own files.
    """
    for name in WRITER_DIRS:
        top = workspace / name
        if not top.is_dir() or top.is_symlink():
            continue
        for path in [top, *top.rglob("*")]:
            if path.is_symlink():
                continue
            mode = path.stat().st_mode
            if not mode & stat.S_IWUSR:
                path.chmod(mode | stat.S_IWUSR)


def contain_writer(argv: list[str], workspace: Path, home: Path) -> list[str]:
    """kloop's containment around a writer: workspace and the agent's home writable, all else read-only;
    reads limited to the allow-list (`readable_for`)."""
    from kloop.agents.containment import contain

    sealed = workspace.parent / "sealed"
    return contain(argv, writable=[workspace, home], protect=[sealed] if sealed.exists() else [],
                   readable=readable_for(workspace, []))


def contain_agent(argv: list[str], request: AgentRequest, home: Path, program: Sequence[str],
                  gateway: tuple[int, Path] | None = None) -> list[str]:  # fmt: skip
    """kloop's containment around any CLI call: a writer may write its workspace and home, a reviewer
    only its home; both read only the allow-list (`readable_for`); with `gateway`, its own network
    namespace whose only way out is the relay to the call's gateway."""
    from kloop.agents.containment import contain

    sealed = request.workspace.parent / "sealed"
    writable = [home] if read_only_role(request) else [request.workspace, home]
    return contain(argv, writable=writable, protect=[sealed] if sealed.exists() else [],
                   readable=readable_for(request.workspace, program),
                   network="gateway" if gateway else "host", gateway=gateway)


def allowed_roots(request: AgentRequest, home: Path, program: Sequence[str]) -> list[str]:
    """Every path a contained call may read (the audit's measure of a benign refusal)."""
    return allowed_roots_for(request.workspace, home, program)


def allowed_roots_for(workspace: Path, home: Path, program: Sequence[str]) -> list[str]:
    from kloop.agents.containment import SYSTEM_READABLE, default_readable

    paths = [*readable_for(workspace, program), *default_readable(), home]
    return [*SYSTEM_READABLE, *(str(p.resolve()) for p in paths)]


def program_roots(program: Sequence[str]) -> list[Path]:
    """The install folders a CLI needs to start: its program's, and its script interpreter's (a venv's
    `bin/python` may link to a Python installed under the host home)."""
    roots: list[Path] = []
    for arg in program[:1]:
        if not os.path.isabs(arg):
            continue
        roots.append(Path(arg).resolve().parent.parent)
        try:
            with open(arg, "rb") as fh:
                first = fh.readline(512)
        except OSError:
            continue
        if first.startswith(b"#!"):
            interp = first[2:].strip().split(b" ")[0].decode(errors="replace")
            if os.path.isabs(interp):
                roots += [Path(interp).parent.parent, Path(interp).resolve().parent.parent]
    return roots


def readable_for(workspace: Path, program: Sequence[str]) -> list[Path]:
    """What an agent may read besides the system and kloop's install: its run's task (`sealed/`) and
    workspace, the CLIs' install (kloop's tools prefix, the program's own folder) and the wiki file
    that `kloop mcp` serves. Never kloop's home as a whole, other runs or the host home."""
    from kloop.wiki import default_db_path

    paths = [workspace, workspace.parent / "sealed", tools_prefix(), *program_roots(program)]
    db = default_db_path()
    paths += [db.with_name(db.name + suffix) for suffix in ("", "-wal", "-shm") if db.with_name(db.name + suffix).exists()]
    return [p for p in paths if p.exists()]


def _transcript_path(request: AgentRequest, name: str) -> Path:
    folder = request.artifacts_dir or Path(tempfile.mkdtemp(prefix=f"kloop-{name}-transcript-"))
    return folder / f"{name}-{request.role.value}-transcript.jsonl"


def _own_limit(limit: float) -> float:
    """A little under the loop's own wait, so the CLI is killed before the loop gives up on it."""
    return max(1.0, limit - min(5.0, 0.05 * limit))
