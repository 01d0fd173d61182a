"""Bounds always honoured, and verdicts honest under pressure.

Time, depth and memory limits stop `spin -a`, the compiler and pan; the whole process group goes
(grandchildren too); a search cut short is `inconclusive` naming the bound (CLI exit 3, the
editor's CS902), never `verified`. After 100 cancelled runs through the API and 100 superseded
saves through the language server: no process left, no `cutespin-*` temp folder left."""
from __future__ import annotations

import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from lsprotocol import types as T

from cutespin import api
from cutespin.cli import main
from cutespin.config import Settings
from cutespin.engine import spin as engine
from cutespin.engine.spin import CancelToken, Cancelled, check_model, find_tools, parse_pan

from . import fakes
from .conftest import cutespin_temp_dirs, descendants
from .inputs import HANDOFF
from .lspkit import change, final_status, open_text, save, server, server_pid, wait_final, wait_until
from ..lsp.helpers import field, pinned_ring

pytestmark = pytest.mark.usefixtures("require_spin")
TOOLS = ("spin", "tcc", "gcc", "cc", "pan", "sleep", "cc1", "as", "ld", "sh")


def tool_children(pid: int) -> list:
    return [p for p in descendants(pid) if p[1] in TOOLS]


@pytest.fixture
def no_cache(monkeypatch):
    """Every run really starts SPIN (the result cache would answer repeated models)."""
    monkeypatch.setattr(api, "CACHE", api._ResultCache(size=0))


def kernel_result(text, **kw):
    fr = api.check_source(text, "k.py", Settings(verify_fixes=False, **kw), with_fixes=False)
    assert fr.error is None, fr.error
    [kr] = fr.kernels
    return kr


# ------------------------------------------------------------------------------- each bound, API

def test_time_bound_in_spin_a_kills_the_group(tmp_path, private_tmp, no_cache):
    spin = tmp_path / "spin"
    spin.write_text(fakes.SPIN_HANGS)
    spin.chmod(0o755)
    engine._tools_cache.clear()
    t0 = time.monotonic()
    kr = kernel_result(HANDOFF, spin=str(spin), timeout=1.0)
    assert time.monotonic() - t0 < 4
    assert kr.verdict == "inconclusive" and "time bound" in kr.reason
    time.sleep(0.2)
    assert not tool_children(os.getpid())  # the grandchild `sleep` went with the group
    assert not cutespin_temp_dirs(str(private_tmp))
    engine._tools_cache.clear()


def test_time_bound_on_a_real_model(private_tmp, no_cache):
    t0 = time.monotonic()
    kr = kernel_result(pinned_ring(30), timeout=1.0)  # `spin -a` alone needs several seconds
    elapsed = time.monotonic() - t0
    assert kr.verdict == "inconclusive" and "time bound" in kr.reason, kr.reason
    assert elapsed < 1.0 + 1.5 + 5 + 3  # the bound, the stages' minimum slices, SIGINT's grace, slack
    assert not tool_children(os.getpid())
    assert not cutespin_temp_dirs(str(private_tmp))


def test_depth_bound(private_tmp, no_cache):
    kr = kernel_result(pinned_ring(10), depth=50)
    assert kr.verdict == "inconclusive" and "depth bound" in kr.reason, kr.reason
    assert kr.run.status == "incomplete" and kr.run.incomplete == "depth"


def test_memory_bound(private_tmp, no_cache):
    # The same search within 16 MB finishes (verified, about 14,000 states since the visibility
    # bits are packed); 4 MB is too little for it.
    kr = kernel_result(pinned_ring(20), memory_mb=4)
    assert kr.verdict == "inconclusive" and "memory bound" in kr.reason, kr.reason


@pytest.mark.skipif(not engine.shutil.which("prlimit"), reason="no prlimit (util-linux): tools run without a CPU cap")
def test_a_tool_whose_checker_was_killed_outright_stops_on_its_own(tmp_path):
    """SIGKILL of the process running a check (a server, a fuzz worker) leaves the tool's own
    process group orphaned; its CPU cap (time bound + CPU_CAP_SLACK_S) still stops it."""
    import signal
    import subprocess
    import sys
    runner = (f"import sys; sys.path.insert(0, {str(engine.__file__.rsplit('/cutespin/', 1)[0])!r}); "
              "from cutespin.engine.spin import _run; "
              "_run([sys.executable, '-c', 'while True: pass'], '.', 1.0, None)")
    parent = subprocess.Popen([sys.executable, "-c", runner], cwd=tmp_path)
    try:
        tool = None
        deadline = time.monotonic() + 10
        while tool is None and time.monotonic() < deadline:
            kids = [pid for pid, _ in descendants(parent.pid)]
            tool = kids[0] if kids else None
            time.sleep(0.02)
        assert tool is not None, "the tool never started"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 1 + engine.CPU_CAP_SLACK_S + 20
    while time.monotonic() < deadline and _alive(tool):
        time.sleep(0.2)
    alive = _alive(tool)
    if alive:
        os.kill(tool, signal.SIGKILL)
    assert not alive, "the orphaned tool outlived its CPU cap"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_pan_time_bound_and_its_process_is_gone(private_tmp):
    from ..engine.test_spin import HUGE_PML
    t0 = time.monotonic()
    res = check_model(HUGE_PML, find_tools(), timeout=1.0, depth=1_000_000)
    assert res.status == "incomplete" and res.incomplete == "time"
    assert time.monotonic() - t0 < 1.0 + 1.5 + 5 + 2
    assert not tool_children(os.getpid())
    assert not cutespin_temp_dirs(str(private_tmp))


@pytest.mark.parametrize("header, bound", [("Bit statespace search for:", "bitstate"),
                                           ("Hash-Compact 4 search for:", "hash-compact")])
def test_a_lossy_search_is_never_a_proof(header, bound):
    out = ("(Spin Version 6.5.2 -- 6 December 2019)\n\n" + header + "\n\tnever claim - (none specified)\n\n"
           "State-vector 20 byte, depth reached 202, errors: 0\n      203 states, stored\n"
           "      0 states, matched\n      203 transitions (= stored+matched)\n")
    res = parse_pan(out)
    assert res.status == "incomplete" and res.incomplete == bound


def test_a_summary_without_states_is_never_a_proof():
    assert parse_pan("errors: 0\n").status == "incomplete"


# -------------------------------------------------------------------------- honest, CLI and JSON

def test_cli_says_which_bound_and_exits_3(tmp_path, capsys, no_cache):
    (tmp_path / "ring.py").write_text(pinned_ring(10))
    assert main(["check", "--no-fixes", "--depth", "50", str(tmp_path / "ring.py")]) == 3
    out = capsys.readouterr().out
    assert "CS902" in out and "depth bound" in out and "verified" not in out
    assert main(["check", "--no-fixes", "--format", "json", "--memory-mb", "16",
                 str(tmp_path / "ring.py")]) in (0, 3)
    doc = json.loads(capsys.readouterr().out)
    # (16 MB is enough for the bound-10 ring: then it is verified, honestly.)
    [k] = doc["files"][0]["kernels"]
    assert k["verdict"] in ("verified", "inconclusive")
    if k["verdict"] == "inconclusive":
        assert "memory" in k["reason"]


# ------------------------------------------------------------------------------ 100 cancellations

def test_100_cancelled_runs_leave_no_process_and_no_temp_folder(private_tmp, no_cache, robustness_log):
    """Cancel at random moments: before the start, in the front end, in `spin -a`, the compiler or
    pan (four at a time, as the editor's pool does)."""
    rng = random.Random(100)
    delays = [rng.uniform(0.0, 0.8) for _ in range(100)]
    outcomes = {"cancelled": 0, "finished": 0}
    lock = threading.Lock()

    def one(i: int):
        token = CancelToken()
        box = {}

        def work():
            try:
                box["r"] = api.check_source(pinned_ring(12 + i % 9), f"k{i}.py", Settings(timeout=60),
                                            token=token, with_fixes=True)
            except Cancelled:
                box["r"] = "cancelled"
            except BaseException as e:  # noqa: BLE001 - reported below
                box["r"] = e

        th = threading.Thread(target=work)
        th.start()
        time.sleep(delays[i])
        t_cancel = time.monotonic()
        token.cancel()
        th.join(30)
        assert not th.is_alive(), "a cancelled check did not stop"
        assert time.monotonic() - t_cancel < 5, "a cancelled check took long to stop"
        r = box["r"]
        assert r == "cancelled" or isinstance(r, api.FileResult), r
        with lock:
            outcomes["cancelled" if r == "cancelled" else "finished"] += 1

    t0 = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(100)))
    assert outcomes["cancelled"] >= 50, outcomes
    deadline = time.monotonic() + 5
    while tool_children(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tool_children(os.getpid())
    assert not cutespin_temp_dirs(str(private_tmp))
    robustness_log(f"cancellation (API): 100 runs in {time.monotonic() - t0:.0f} s: {outcomes['cancelled']} "
                   f"cancelled mid-run, {outcomes['finished']} finished first; 0 processes and 0 temp folders left")


async def test_100_superseded_saves_through_the_editor(tmp_path, robustness_log):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    rng = random.Random(7)
    async with server(tmp_path, settings={"timeout": 60}, env={"TMPDIR": str(tmpdir)}) as client:
        pid = server_pid(client)
        path = tmp_path / "ring.py"
        uri = open_text(client, path, pinned_ring(14))
        t0 = time.monotonic()
        seen_tools = 0
        version = 1
        for i in range(100):
            version += 1
            change(client, uri, version, pinned_ring(12 + (i % 11)) + f"# edit {i}\n")
            save(client, uri)
            await __import__("asyncio").sleep(rng.uniform(0.0, 0.25))
            seen_tools += bool(tool_children(pid))
        version += 1
        change(client, uri, version, pinned_ring(6))
        save(client, uri)
        done = await wait_final(client, uri, version, timeout=120)
        assert field(done, "state") == "done"
        assert [field(r, "verdict") for r in field(done, "results")] == ["verified"]
        await wait_until(lambda: not tool_children(pid), 10, "no SPIN process left")
        await wait_until(lambda: not cutespin_temp_dirs(str(tmpdir)), 10, "no temp folder left")
        # Superseded versions were cancelled or finished before the next one started; none of them
        # published after a newer version had started.
        states = [(field(s, "version"), field(s, "state")) for s in client.statuses if field(s, "uri") == uri]
        last_checking = {}
        for idx, (v, st) in enumerate(states):
            if st == "checking":
                last_checking[v] = idx
        for idx, (v, st) in enumerate(states):
            if st in ("checked", "done") and v != version:
                newer = [i for w, i in last_checking.items() if w > v]
                assert not newer or idx < min(newer), f"version {v} published after a newer check started"
        cancelled = len({v for v, st in states if st == "cancelled"})
        assert cancelled >= 20, states[-20:]
        assert list(client.diagnostics.get(uri, ())) == []
        # No server error reached the client's log (e.g. a cancelled request's late answer).
        assert not [m.message for m in client.log_messages if m.type == T.MessageType.Error]
        robustness_log(f"cancellation (editor): 100 superseding saves in {time.monotonic() - t0:.0f} s, "
                       f"{cancelled} runs cancelled, SPIN seen running at {seen_tools} of them; 0 processes "
                       f"and 0 temp folders left")
    assert final_status(client, uri) is not None


async def test_the_editor_shows_which_bound_was_hit(tmp_path):
    async with server(tmp_path, settings={"timeout": 60, "depth": 50}) as client:
        uri = open_text(client, tmp_path / "ring.py", pinned_ring(10))
        done = await wait_final(client, uri)
        assert [field(r, "verdict") for r in field(done, "results")] == ["inconclusive"]
        ds = await wait_until(lambda: client.diagnostics.get(uri), 10, "diagnostics")
        [d] = [d for d in ds if d.code == "CS902"]
        assert "depth bound" in d.message and d.severity == T.DiagnosticSeverity.Warning


async def test_a_superseded_check_never_reports_after_its_successor(tmp_path):
    """A slow check superseded by a save whose answer is immediate (the text is unchanged since the
    last finished check): the old check's "cancelled" must not come after the new "done", or the
    editor would show the document as cancelled while its results are up to date."""
    async with server(tmp_path, settings={"timeout": 60}) as client:
        path = tmp_path / "ring.py"
        fast, slow = pinned_ring(4), pinned_ring(24)
        uri = open_text(client, path, fast)
        await wait_final(client, uri, 1)
        for v in range(2, 8, 2):
            change(client, uri, v, slow)
            save(client, uri)
            await wait_until(lambda: tool_children(server_pid(client)), 30, "SPIN running on the slow text")
            change(client, uri, v + 1, fast)
            save(client, uri)
            done = await wait_final(client, uri, v + 1)
            assert field(done, "cached") is True
            await __import__("asyncio").sleep(0.5)
            last = [s for s in client.statuses if field(s, "uri") == uri][-1]
            assert (field(last, "state"), field(last, "version")) == ("done", v + 1), last
