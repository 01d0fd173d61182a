"""Shared set-up of the editor tests: the opt-out, the tool cache, the .vsix and the sample.

The tools (node 24, code-server, puppeteer-core, chromium, a pinned Neovim) are installed by
`scripts/editor-tools` into a cache outside the repository (~/.cache/cutespin-editors, or
$CUTESPIN_EDITORS_CACHE), once per version; an install failure fails the tests. The only way to
skip them is to say so: CUTESPIN_SKIP_EDITORS=1.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE / "artifacts"
SAMPLE = ROOT / "samples" / "named_barrier_mismatch.py"
SKIP_ENV = "CUTESPIN_SKIP_EDITORS"


def pytest_collection_modifyitems(config, items):
    if os.environ.get(SKIP_ENV, "") not in ("", "0"):
        marker = pytest.mark.skip(reason=f"editor tests skipped on request ({SKIP_ENV}={os.environ[SKIP_ENV]})")
        for item in items:
            if Path(item.path).resolve().parent == HERE:
                item.add_marker(marker)


def run_logged(cmd, timeout, what, **kw):
    """Run a command; on failure, fail the test with the tail of its output."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        pytest.fail(f"{what} failed (exit {p.returncode}, {time.monotonic() - t0:.0f} s):\n"
                    f"--- stdout ---\n{p.stdout[-6000:]}\n--- stderr ---\n{p.stderr[-6000:]}")
    return p


def editor_tools(kind: str) -> dict:
    """Install (once, cached) and locate the tools for `kind` (vscode or neovim)."""
    p = run_logged([str(ROOT / "scripts" / "editor-tools"), kind], 3000, f"scripts/editor-tools {kind}")
    sys.stderr.write(p.stderr[-2000:])
    return dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="session")
def node_env() -> dict:
    """The environment with node 24 (from the cache) first on PATH."""
    tools = editor_tools("node")
    return dict(os.environ, PATH=f"{tools['NODE_BIN']}:{os.environ['PATH']}")


@pytest.fixture(scope="session")
def vsix(node_env) -> Path:
    """The extension, built with the README's command."""
    p = run_logged([str(ROOT / "scripts" / "build-vsix")], 900, "scripts/build-vsix", env=node_env)
    path = Path(p.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


@pytest.fixture(scope="session")
def require_spin_tools():
    if shutil.which("spin") is None:
        pytest.fail("spin is not installed: run the README's set-up command (it installs spin and tcc)")


def expected_finding(path: Path) -> dict:
    """The sample's expected line (its `# cutespin-expect:` line), and the CLI's finding there:
    code, column and the verified fix (title, the fixed text)."""
    head = path.read_text().splitlines()[0]
    m = re.search(r"lines=(\d+)", head)
    assert head.startswith("# cutespin-expect:") and m, head
    line = int(m.group(1))
    p = subprocess.run([sys.executable, "-m", "cutespin", "check", "--format", "json", str(path)],
                       capture_output=True, text=True, timeout=300)
    report = json.loads(p.stdout)
    findings = [f for file in report["files"] for k in file["kernels"] for f in k["findings"]]
    assert len(findings) == 1, findings
    f = findings[0]
    assert f["range"]["start"]["line"] == line, (f["range"], line)
    fix = next(x for x in f["fixes"] if x["verified"])
    lines = path.read_text().splitlines(keepends=True)
    for e in sorted(fix["edits"], key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["column"]),
                    reverse=True):
        s, t = e["range"]["start"], e["range"]["end"]
        assert s["line"] == t["line"], e
        row = lines[s["line"] - 1]
        lines[s["line"] - 1] = row[:s["column"] - 1] + e["new_text"] + row[t["column"] - 1:]
        fixed_line, fixed_lineno = lines[s["line"] - 1].strip(), s["line"]
    return {"line": line, "column": f["range"]["start"]["column"], "code": f["code"], "fixTitle": fix["title"],
            "fixedText": "".join(lines), "fixedLine": fixed_line, "fixedLineNo": fixed_lineno}
