"""Shared by the robustness suites: sizes from the environment, a log that ends up in the CI
output (the fuzzer's run size and crash count), and helpers to watch processes and temp folders."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from ..lsp.helpers import descendants  # noqa: F401 - shared with the suites here

REPORT: list = []  # lines printed in pytest's terminal summary


def env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


@pytest.fixture
def robustness_log():
    """Record a line for the terminal summary (shown in the CI log even when the test passes)."""
    return REPORT.append


def pytest_terminal_summary(terminalreporter):
    if REPORT:
        terminalreporter.section("cutespin robustness")
        for line in REPORT:
            terminalreporter.write_line(line)


def cutespin_temp_dirs(root: str | None = None) -> set:
    root = root or tempfile.gettempdir()
    try:
        return {e for e in os.listdir(root) if e.startswith("cutespin-")}
    except OSError:
        return set()


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temp root of the test's own for the engine's `cutespin-*` folders (in-process runs)."""
    root = tmp_path / "tmproot"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
