"""Missing or broken tools: no spin, no compiler, a spin that crashes or prints garbage, a pan that
segfaults, prints garbage or ignores SIGINT, a compiler that crashes, fails or hangs. Each gives
one clear error that says what to install (CLI: exit 2, one line, no traceback; editor: one
pop-up, a `tool` status), never a verdict and never "a cutespin bug"; the server keeps serving."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from lsprotocol import types as T

from cutespin import api
from cutespin.config import Settings
from cutespin.engine import spin as engine

from . import fakes
from .conftest import cutespin_temp_dirs, descendants
from .inputs import HANDOFF, RACE
from .lspkit import final_status, open_text, save, server, still_serving, toolbox, wait_final, wait_until
from ..lsp.helpers import field

pytestmark = pytest.mark.usefixtures("require_spin")


@pytest.fixture(autouse=True)
def fresh_tools_cache(monkeypatch):
    """Tools are looked up again and SPIN really runs (no cached result answers for the fake)."""
    monkeypatch.setattr(api, "CACHE", api._ResultCache(size=0))
    engine._tools_cache.clear()
    yield
    engine._tools_cache.clear()


def check(tmp_path, text=RACE, **kw):
    return api.check_source(text, str(tmp_path / "k.py"), Settings(verify_fixes=False, **kw), with_fixes=False)


def fake(tmp_path, name: str, script: str) -> str:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    return str(path)


def cli(args, env_path: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": env_path}
    return subprocess.run([sys.executable, "-m", "cutespin", "check", "--no-fixes", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def assert_one_clear_error(p: subprocess.CompletedProcess, *needles: str):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr + p.stdout
    assert "a cutespin bug" not in p.stderr + p.stdout
    first = p.stderr.strip().splitlines()[0]
    assert first.startswith("cutespin: error: "), p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


# ---------------------------------------------------------------------------------- engine level

@pytest.mark.parametrize("script, needle", [
    (fakes.SPIN_SEGFAULTS, "reinstall it"),
    (fakes.SPIN_GARBAGE, "reinstall it"),
    (fakes.SPIN_GARBAGE_FAILS, "reinstall it"),
    (fakes.PAN_SEGFAULTS, "pan) crashed"),
    (fakes.PAN_GARBAGE, "pan) crashed"),
])
def test_a_broken_spin_or_pan_is_a_tool_error_not_a_verdict(tmp_path, private_tmp, script, needle):
    with pytest.raises(engine.ToolError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        check(tmp_path, spin=fake(tmp_path, "spin", script), compiler=fakes.REAL_TCC, timeout=20)
    assert not cutespin_temp_dirs(str(private_tmp))


@pytest.mark.parametrize("script", [fakes.SPIN_VERSION_GARBAGE, fakes.SPIN_VERSION_CRASH])
def test_something_that_is_not_spin_is_refused_up_front(tmp_path, script):
    with pytest.raises(engine.ToolError, match="is it SPIN"):
        check(tmp_path, spin=fake(tmp_path, "spin", script))


def test_a_pan_that_prints_only_errors_0_is_never_verified(tmp_path, private_tmp):
    fr = check(tmp_path, text=HANDOFF, spin=fake(tmp_path, "spin", fakes.PAN_ZERO_ERRORS_ONLY),
               compiler=fakes.REAL_TCC)
    [kr] = fr.kernels
    assert kr.verdict == "inconclusive" and "bound" in kr.reason


def test_a_pan_that_ignores_sigint_is_killed_at_the_time_bound(tmp_path, private_tmp):
    t0 = time.monotonic()
    fr = check(tmp_path, text=HANDOFF, spin=fake(tmp_path, "spin", fakes.PAN_IGNORES_SIGINT),
               compiler=fakes.REAL_TCC, timeout=1.5)
    elapsed = time.monotonic() - t0
    [kr] = fr.kernels
    assert kr.verdict == "inconclusive" and "time" in kr.reason
    assert elapsed < 1.5 + 5 + 3  # the bound, SIGINT's grace, slack
    assert not [p for p in descendants(os.getpid()) if p[1] == "pan"]
    assert not cutespin_temp_dirs(str(private_tmp))


@pytest.mark.parametrize("script, needle", [(fakes.COMPILER_SEGFAULTS, "reinstall it"),
                                            (fakes.COMPILER_FAILS, "reinstall it")])
def test_a_broken_compiler_is_a_tool_error(tmp_path, private_tmp, script, needle):
    with pytest.raises(engine.ToolError, match=needle):
        check(tmp_path, compiler=fake(tmp_path, "cc", script))
    assert not cutespin_temp_dirs(str(private_tmp))


def test_a_hanging_compiler_and_its_children_are_killed_at_the_time_bound(tmp_path, private_tmp):
    t0 = time.monotonic()
    fr = check(tmp_path, text=HANDOFF, compiler=fake(tmp_path, "cc", fakes.COMPILER_HANGS), timeout=1.0)
    assert time.monotonic() - t0 < 6
    [kr] = fr.kernels
    assert kr.verdict == "inconclusive" and "time" in kr.reason
    time.sleep(0.2)
    assert not [p for p in descendants(os.getpid()) if p[1] in ("sleep", "cc")]
    assert not cutespin_temp_dirs(str(private_tmp))


# ------------------------------------------------------------------------------------------- CLI

def test_cli_without_spin(tmp_path):
    (tmp_path / "k.py").write_text(RACE)
    p = cli(["k.py"], toolbox(tmp_path / "tools", {"tcc": fakes.REAL_TCC}), tmp_path)
    assert_one_clear_error(p, "SPIN was not found", "apt-get install spin")
    assert len(p.stderr.strip().splitlines()) == 1


def test_cli_without_a_compiler(tmp_path):
    (tmp_path / "k.py").write_text(RACE)
    p = cli(["k.py"], toolbox(tmp_path / "tools", {"spin": fakes.REAL_SPIN}), tmp_path)
    assert_one_clear_error(p, "no C compiler", "apt-get install tcc")
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, script, needle", [
    ("segfaulting spin", fakes.SPIN_SEGFAULTS, "apt-get install spin"),
    ("not spin at all", fakes.SPIN_VERSION_GARBAGE, "is it SPIN"),
    ("segfaulting pan", fakes.PAN_SEGFAULTS, "crashed"),
])
def test_cli_with_a_broken_spin(tmp_path, name, script, needle):
    (tmp_path / "k.py").write_text(RACE)
    path = toolbox(tmp_path / "tools", {"spin": script, "tcc": fakes.REAL_TCC})
    p = cli(["k.py"], path, tmp_path)
    assert_one_clear_error(p, needle)
    p = cli(["--spin", str(tmp_path / "tools" / "spin"), "k.py"], path, tmp_path)  # the same through --spin
    assert_one_clear_error(p, needle)


def test_cli_with_a_crashing_compiler(tmp_path):
    (tmp_path / "k.py").write_text(RACE)
    p = cli(["k.py"], toolbox(tmp_path / "tools", {"spin": fakes.REAL_SPIN, "tcc": fakes.COMPILER_SEGFAULTS}),
            tmp_path)
    assert_one_clear_error(p, "reinstall it", "apt-get install tcc")


def test_spin_and_tcc_are_enough(tmp_path):
    """What the README's set-up installs: SPIN preprocesses its models with gcc, which the Debian
    spin package does not pull in; without gcc the engine points SPIN at tcc."""
    (tmp_path / "k.py").write_text(RACE)
    p = cli(["--no-trace", "k.py"], toolbox(tmp_path / "tools", {"spin": fakes.REAL_SPIN, "tcc": fakes.REAL_TCC}),
            tmp_path)
    assert p.returncode == 1, p.stderr
    assert "CS201" in p.stdout and not p.stderr


# --------------------------------------------------------------------------------------- editor

@pytest.mark.parametrize("tools, needle", [
    ({"tcc": fakes.REAL_TCC}, "SPIN was not found"),
    ({"spin": fakes.REAL_SPIN}, "no C compiler"),
    ({"spin": fakes.SPIN_SEGFAULTS, "tcc": fakes.REAL_TCC}, "apt-get install spin"),
    ({"spin": fakes.PAN_SEGFAULTS, "tcc": fakes.REAL_TCC}, "crashed"),
])
async def test_editor_reports_a_broken_tool_once_and_keeps_serving(tmp_path, tools, needle):
    path = toolbox(tmp_path / "tools", tools)
    async with server(tmp_path, settings={"timeout": 10}, env={"PATH": path}) as client:
        uri = open_text(client, tmp_path / "race.py", RACE)
        err = await wait_final(client, uri)
        assert field(err, "state") == "error" and field(err, "kind") == "tool", err
        assert needle in field(err, "message")
        popups = [m for m in client.messages if needle in m.message]
        assert len(popups) == 1 and popups[0].type == T.MessageType.Error
        assert not client.diagnostics.get(uri)  # no verdict, no half result
        # Saving again reports nothing new, and the server still answers everything.
        n = len(client.statuses)
        save(client, uri)
        await wait_until(lambda: [s for s in client.statuses[n:] if field(s, "state") == "error"], 30, "error")
        assert len([m for m in client.messages if needle in m.message]) == 1
        await still_serving(client, uri)
        # A file without kernels is still handled (idle), and so is a syntax error (a diagnostic).
        other = open_text(client, tmp_path / "plain.py", "print('hi')\n")
        assert field(await wait_final(client, other), "state") == "idle"
        broken = open_text(client, tmp_path / "broken.py", RACE.replace("mbarrier_arrive(ready)", "mbarrier_arrive("))
        st = await wait_final(client, broken)
        assert field(st, "state") == "error" and field(st, "kind") in ("frontend", "tool")


async def test_editor_recovers_when_the_spin_setting_is_fixed(tmp_path):
    bad = fake(tmp_path, "spin", fakes.SPIN_SEGFAULTS)
    async with server(tmp_path, settings={"spin": bad, "timeout": 10}) as client:
        uri = open_text(client, tmp_path / "race.py", RACE)
        assert field(await wait_final(client, uri), "kind") == "tool"
        n = len(client.statuses)
        client.set_configuration({"spin": fakes.REAL_SPIN, "timeout": 10}, section="cutespin")
        client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
        done = await wait_until(lambda: [s for s in client.statuses[n:] if field(s, "uri") == uri
                                         and field(s, "state") == "done"], 60, "a check with the real spin")
        assert [field(r, "findings") for r in field(done[0], "results")] == [["CS201"]]
        assert final_status(client, uri)
