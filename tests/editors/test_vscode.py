"""Real VS Code: code-server's workbench in headless Chromium, with the built .vsix installed.

Opens a copy of a buggy sample, saves it, and checks the squiggle's line, the Problems count,
the hover's interleaving, runs the "Show the Promela model" and "Show the counterexample trace"
commands from the palette, then applies the quick fix, saves, and checks that the squiggle and the
problem are gone. Screenshots land in tests/editors/artifacts/ (squiggle, hover, promela, trace, quickfix, fixed).
The server runs from the environment (`cutespin.interpreter` = this Python, which has cutespin
installed): the set-up the README recommends.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, HERE, SAMPLE, editor_tools, expected_finding, run_logged


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise AssertionError(f"code-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"code-server did not answer {url} within {timeout} s")


def kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group (extension host, server)
    except ProcessLookupError:
        pass


def test_vscode_squiggle_hover_quickfix(tmp_path, vsix, require_spin_tools):
    tools = editor_tools("vscode")
    expect = expected_finding(SAMPLE)

    ws = tmp_path / "workspace"
    ws.mkdir()
    target = ws / SAMPLE.name
    shutil.copyfile(SAMPLE, target)
    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    env = dict(os.environ, PATH=f"{tools['NODE_BIN']}:{os.environ['PATH']}",
               XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), XDG_DATA_HOME=str(tmp_path / "xdg-data"))
    base = [tools["CODE_SERVER"], "--user-data-dir", str(user_data), "--extensions-dir", str(extensions),
            "--config", str(tmp_path / "code-server.yaml")]
    run_logged(base + ["--install-extension", str(vsix)], 300, "code-server --install-extension", env=env)
    (user_data / "User" / "settings.json").write_text(json.dumps({
        "cutespin.interpreter": sys.executable,
        "cutespin.trace.server": "messages",
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "extensions.ignoreRecommendations": True,
        "chat.disableAIFeatures": True,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "editor.minimap.enabled": False,
        "editor.stickyScroll.enabled": False,
        "editor.hover.delay": 100,
        "files.autoSave": "off",
        "window.zoomLevel": 0,
    }, indent=1))

    port = free_port()
    log = (tmp_path / "code-server.log").open("w")
    cs = subprocess.Popen(base + ["--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry",
                                  "--disable-update-check", "--disable-workspace-trust",
                                  "--disable-getting-started-override", str(ws)],
                          stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    ARTIFACTS.mkdir(exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        if old.name.startswith(("squiggle", "hover", "promela", "trace", "quickfix", "fixed", "failure")):
            old.unlink()
    driver = None
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", cs, 60)
        cfg = {"url": f"http://127.0.0.1:{port}/?folder={ws}", "file": target.name, "line": expect["line"],
               "column": expect["column"], "code": expect["code"], "fixTitle": expect["fixTitle"],
               "fixCheck": expect["fixedLine"], "fixLine": expect["fixedLineNo"], "artifacts": str(ARTIFACTS), "chromium": tools["CHROMIUM"]}
        driver = subprocess.Popen([tools["NODE"], str(HERE / "vscode_driver.cjs"), json.dumps(cfg)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=dict(env, NODE_PATH=tools["PUPPETEER_NODE_PATH"]), start_new_session=True)
        out, _ = driver.communicate(timeout=600)
        sys.stdout.write(out)
        result = next((json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")), None)
        assert driver.returncode == 0 and result and result.get("ok"), \
            f"the VS Code test failed: {result and result.get('error')}\n{out[-5000:]}"
    finally:
        if driver is not None:
            kill_group(driver)
        kill_group(cs)
        log.close()
        shutil.copyfile(tmp_path / "code-server.log", ARTIFACTS / "code-server.log")
        for old in ARTIFACTS.glob("vscode-cutespin-output-*.log"):
            old.unlink()
        logs = sorted(user_data.glob("logs/**/*cutespin*.log"))
        for i, f in enumerate(logs):
            shutil.copyfile(f, ARTIFACTS / f"vscode-cutespin-output-{i}.log")

    # What the driver saw, and what ended up on disk.
    assert expect["line"] in result["squiggleLines"]
    assert "1 finding" in result["statusBefore"]["cutespin"]
    assert any(f"at line {expect['line']}" in r for r in result["problemRows"])
    assert "Interleaving found by SPIN" in result["hover"] and "barrier after" in result["hover"]
    assert any(expect["fixTitle"] in q for q in result["quickFixes"])
    assert any(".pml" in t for t in result["promelaTabs"])
    assert expect["code"] in result["trace"] and "barrier after" in result["trace"]
    assert "verified" in result["statusAfter"]["cutespin"]
    assert target.read_text() == expect["fixedText"] + "\n# saved by the editor test\n"
    # One output channel: the extension's log, the LSP trace (cutespin.trace.server) and the server's log.
    output = "".join(f.read_text() for f in ARTIFACTS.glob("vscode-cutespin-output-*.log"))
    assert "-m cutespin serve" in output and "Sending request 'initialize" in output, output[:2000]
    assert "Received notification 'cutespin/status'" in output and "counterexample in" in output, output[:2000]
    for name in ("squiggle", "hover", "promela", "trace", "quickfix", "fixed"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name
