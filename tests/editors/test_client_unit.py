"""The VS Code client's own tests, with node's test runner (`npm test` in vscode-client/):
unit tests of its logic (settings -> server options, launch command, status text, command
arguments, package.json against the server's options) and a protocol-level test that drives
`cutespin serve` through vscode-languageserver-protocol exactly as the client does.

Depends on the `vsix` fixture: building the .vsix with the README's command installs the
client's pinned dependencies (npm ci) and type-checks and bundles the extension.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import ARTIFACTS, ROOT


def test_client_unit_and_protocol(vsix, node_env, require_spin_tools):
    env = dict(node_env, CUTESPIN_PYTHON=sys.executable)
    p = subprocess.run(["npm", "test", "--silent"], cwd=ROOT / "vscode-client", env=env, capture_output=True,
                       text=True, timeout=600)
    out = p.stdout + p.stderr
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "client-tests.tap").write_text(out)
    passed = re.search(r"^# pass (\d+)", out, re.M)
    failed = re.search(r"^# fail (\d+)", out, re.M)
    if p.returncode != 0 or not passed or not failed or failed.group(1) != "0":
        pytest.fail(f"npm test in vscode-client failed (exit {p.returncode}):\n{out[-6000:]}")
    assert int(passed.group(1)) >= 12, out[-2000:]
