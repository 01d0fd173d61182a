"""Bad and partial input (`inputs.py`) through the API, the CLI and the language server: syntax
errors, half-written kernels, unknown DSL calls, absurd constants, deep nesting, huge files,
bytes that are not UTF-8, files that are not kernels. Each gets a finding, an inconclusive
verdict with its reason, or one front-end error; never a traceback; an internal error is a
crash (CLI exit 2 with "a cutespin bug", the editor's `internal` status), never inconclusive."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from lsprotocol import types as T

from cutespin import api
from cutespin.cli import main
from cutespin.config import Settings

from .inputs import CASES, HANDOFF
from .lspkit import close, final_status, open_text, server, server_pid, still_serving, wait_until
from .mutate import ROOT
from ..lsp.helpers import field

pytestmark = pytest.mark.usefixtures("require_spin")
BY_NAME = {c.name: c for c in CASES}
FILE_NAMES = {c.name: f"{c.name}.py" for c in CASES}


def as_text(case) -> str:
    return case.text if isinstance(case.text, str) else case.text.decode("utf-8", errors="replace")


def check_expectation(name: str, error, kernels: list, elapsed: float, cli: bool = False):
    """kernels: [(verdict, reason, [codes])]."""
    expect = BY_NAME[name].expect
    if cli and name == "lone_surrogate":  # on disk it is bytes that are not UTF-8: replaced, like any
        expect = "any"
    kind, _, word = expect.partition(":")
    assert elapsed < 60, f"{name}: {elapsed:.0f} s"
    if kind == "frontend":
        assert error and word in error, (name, error, kernels)
        return
    assert not error or "a cutespin bug" not in error, (name, error)
    if kind == "nokernel":
        assert not error and not kernels, (name, error, kernels)
    elif kind == "finding":
        assert not error and any(word in codes for _, _, codes in kernels), (name, error, kernels)
    elif kind == "nofinding":  # a correct kernel: verified, or inconclusive at some bound, never a finding
        assert not error and kernels and all(v in ("verified", "inconclusive") and not codes
                                             for v, _, codes in kernels), (name, kernels)
    elif kind == "inconclusive":
        assert not error and kernels and all(v == "inconclusive" and r for v, r, _ in kernels), (name, kernels)
        assert not word or all(word in r for _, r, _ in kernels), (name, kernels)
    else:
        assert error is None or error.startswith("cannot analyze"), (name, error)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_api(name):
    case = BY_NAME[name]
    t0 = time.monotonic()
    fr = api.check_source(as_text(case), FILE_NAMES[name], Settings(timeout=5, verify_fixes=False), with_fixes=False)
    check_expectation(name, fr.error, [(k.verdict, k.reason or "", [f.code for f in k.findings]) for k in fr.kernels],
                      time.monotonic() - t0)


def test_cli_over_all_of_them_at_once(tmp_path, robustness_log):
    for c in CASES:
        data = c.text if isinstance(c.text, bytes) else c.text.encode("utf-8", "surrogatepass")
        (tmp_path / FILE_NAMES[c.name]).write_bytes(data)
    (tmp_path / "\udcff\udcfebad_name.py".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
     ).write_bytes(HANDOFF.encode())
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "cutespin", "check", "--no-fixes", "--timeout", "5", "--format", "json",
                        "."], cwd=tmp_path, capture_output=True, timeout=900,
                       env={**os.environ, "PYTHONIOENCODING": "utf-8:strict",
                            "PYTHONPATH": str(ROOT / "server")})
    elapsed = time.monotonic() - t0
    assert b"Traceback" not in p.stderr, p.stderr.decode(errors="replace")
    assert p.returncode in (1, 2), p.returncode  # findings, and the files refused (exit 2)
    doc = json.loads(p.stdout)
    errors = {os.path.basename(e["path"]): e["message"] for e in doc["errors"]}
    files = {os.path.basename(f["path"]): f for f in doc["files"]}
    assert not [m for m in errors.values() if "a cutespin bug" in m]
    for c in CASES:
        f = files.get(FILE_NAMES[c.name])
        kernels = [(k["verdict"], k["reason"] or "", [x["code"] for x in k["findings"]]) for k in f["kernels"]] if f \
            else []
        check_expectation(c.name, errors.get(FILE_NAMES[c.name]), kernels, 0, cli=True)
    robustness_log(f"bad input (CLI): {len(CASES) + 1} files in one run, {elapsed:.0f} s, {len(errors)} refused "
                   f"with a front-end error, exit {p.returncode}, no traceback")
    # The text format prints everything too (a file name that is not UTF-8 included).
    p = subprocess.run([sys.executable, "-m", "cutespin", "check", "--no-fixes", "--timeout", "5", "."], cwd=tmp_path,
                       capture_output=True, timeout=900,
                       env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONPATH": str(ROOT / "server")})
    assert b"Traceback" not in p.stderr and p.returncode in (1, 2)
    assert b"\xff\xfebad_name.py" in p.stdout


async def test_editor_over_all_of_them(tmp_path, robustness_log):
    async with server(tmp_path, settings={"timeout": 5}) as client:
        pid = server_pid(client)
        uris = {}
        t0 = time.monotonic()
        for c in CASES:
            if c.lsp:
                uris[c.name] = open_text(client, tmp_path / FILE_NAMES[c.name], c.text)
        for name, uri in uris.items():
            st = await wait_until(lambda: final_status(client, uri), 180, f"a final status for {name}")
            state, kind = field(st, "state"), field(st, "kind")
            assert kind != "internal" and state != "cancelled", (name, st)
            expect = BY_NAME[name].expect
            if expect.startswith("frontend"):
                assert state == "error" and kind == "frontend", (name, st)
                [d] = client.diagnostics[uri]
                assert d.severity == T.DiagnosticSeverity.Error and expect.split(":")[1] in d.message
            elif expect == "nokernel":
                assert state == "idle" and not client.diagnostics.get(uri), (name, st)
            else:
                assert state == "done", (name, st)
                verdicts = [field(r, "verdict") for r in field(st, "results")]
                if expect.startswith("inconclusive"):
                    assert set(verdicts) == {"inconclusive"}, (name, verdicts)
                    assert any(d.code == "CS902" for d in client.diagnostics[uri])
                if expect.startswith("finding"):
                    codes = [d.code for d in client.diagnostics[uri]]
                    assert expect.split(":")[1] in codes, (name, codes)
            # Every diagnostic lies inside the document.
            n_lines = len(BY_NAME[name].text.splitlines()) + 1
            for d in client.diagnostics.get(uri, []):
                assert 0 <= d.range.start.line <= d.range.end.line <= n_lines, (name, d.range)
            await still_serving(client, uri)
        # No server error reached the log, the process is alive and has nothing running.
        assert not [m.message for m in client.log_messages if m.type == T.MessageType.Error]
        assert not [m.message for m in client.messages if "internal error" in m.message]
        os.kill(pid, 0)
        for uri in uris.values():
            close(client, uri)
        robustness_log(f"bad input (editor): {len(uris)} documents in {time.monotonic() - t0:.0f} s, server up, "
                       f"no internal error")


def test_an_internal_error_is_a_crash_not_inconclusive(tmp_path, capsys, monkeypatch):
    """A bug in the checker is reported as one (exit 2, "a cutespin bug"), never folded into an
    inconclusive verdict, and does not hide the other files."""
    (tmp_path / "a.py").write_text(HANDOFF)
    (tmp_path / "b.py").write_text(HANDOFF.replace("class K", "class B"))
    import cutespin.api as api_mod
    real = api_mod.lower

    def broken(k, *args, **kwargs):
        if k.qualname.startswith("K."):
            raise RuntimeError("injected bug")
        return real(k, *args, **kwargs)

    monkeypatch.setattr(api_mod, "lower", broken)
    assert main(["check", "--no-fixes", "--format", "json", str(tmp_path)]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [e["message"] for e in doc["errors"]] == [
        "internal error (a cutespin bug; please report it): RuntimeError: injected bug at test_bad_input.py:"
        + doc["errors"][0]["message"].rsplit(":", 1)[1]]
    assert [k["verdict"] for f in doc["files"] for k in f["kernels"]] == ["verified"]
