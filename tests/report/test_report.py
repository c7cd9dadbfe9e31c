"""The report: rendered from a real run directory, read by a real headless Chromium, and in Markdown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html import escape
from pathlib import Path

import pytest

from kloop.cli import main
from kloop.verify.stats import INTERVAL_METHOD
from tests.loop.helpers import VECTORIZED, fake, make_campaign

EVIL = "<script>alert('pwned')</script><img src=x onerror=alert(1)>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run on the tiny task: two accepted rounds, one rejected, agent text with markup in it."""
    tmp = tmp_path_factory.mktemp("report")
    lines = [
        {"claim": f"vectorized {EVIL}", "files": {"main.py": VECTORIZED, "FAKE_VERDICT.json": fake(2.0)}},
        {"claim": "a slower variant", "files": {"FAKE_VERDICT.json": fake(1.5)}},
        {"claim": "faster still", "files": {"FAKE_VERDICT.json": fake(3.0)}},
    ]
    make_campaign(tmp, lines).run()
    return tmp / "run"


def _browser(args: list[str], user_dir: Path) -> subprocess.CompletedProcess[str]:
    if CHROMIUM is None:  # never a skip: scripts/setup.sh installs it, and CI must run this test
        pytest.fail("chromium is missing: scripts/setup.sh installs Debian's package (apt-get install chromium)")
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={user_dir}", *args], capture_output=True,
                          text=True, timeout=120)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_html_has_every_section_and_escapes_agent_text(run_dir: Path) -> None:
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / "report.html").read_text()
    for marker in ('id="summary"', 'id="chart-rounds"', 'id="chart-time"', 'id="lineage"', 'id="rounds"',
                   'id="evidence"', 'id="round-2"', "Reviewer:", "Gate:"):
        assert marker in html, marker
    assert "<script" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(" in html
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)  # nothing fetched from a network
    assert "does not clear the current best" in html  # round 2's rejection, with its reason
    assert "bootstrap" not in html and escape(INTERVAL_METHOD) in html  # issue 26: the one method, named right


def test_the_page_loads_in_headless_chromium_without_console_errors(run_dir: Path, tmp_path: Path) -> None:
    page = run_dir / "report.html"
    main(["report", str(run_dir)])
    dom = _browser(["--dump-dom", page.as_uri()], tmp_path / "profile1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom.stderr) == []
    for element in ('id="lineage"', 'class="chart"', 'id="evidence"', "<circle", "r003"):
        assert element in dom.stdout, element
    shot = Path(os.environ.get("KLOOP_REPORT_SCREENSHOT") or tmp_path / "report.png")
    result = _browser([f"--screenshot={shot}", "--window-size=1280,2200", page.as_uri()], tmp_path / "profile2")
    assert result.returncode == 0 and shot.stat().st_size > 10_000, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_console_check_catches_a_page_error(tmp_path: Path) -> None:
    """The check above can fail: a page with a script error is caught by the same detector."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>undefinedFunction()</script></body></html>")
    result = _browser(["--dump-dom", bad.as_uri()], tmp_path / "profile")
    assert any("undefinedFunction" in line for line in _console(result.stderr))


def test_markdown_report(run_dir: Path) -> None:
    out = run_dir / "r.md"
    assert main(["report", str(run_dir), "--format", "md", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| 3 | iterate | r003 |" in text and "## Claims" in text
    assert "<script>" in text.split("## Claims")[1]  # agent text only inside code spans
    assert "`vectorized <script>" in text
    assert INTERVAL_METHOD in text and "bootstrap" not in text


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert main(["report", str(tmp_path), "--format", "pdf"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("kloop: error:") for line in err)
