"""Settings: workspace/configuration with didChangeConfiguration, initializationOptions as the
fallback, per-code severity, invalid values reported and defaulted; the typed options parser."""
from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities

from cutespin.lsp.settings import ServerOptions, parse_options

from .helpers import SERVER_CONFIG, WRAP_PARITY, field, open_doc, save, wait_diagnostics, wait_status


def codes(client, uri):
    return sorted(d.code for d in client.diagnostics.get(uri, []))


async def test_loop_bound_change_takes_effect(client: LanguageClient):
    uri = open_doc(client, WRAP_PARITY)
    await wait_status(client, uri, "done")
    assert "CS101" in codes(client, uri)  # the phase bug needs the ring to wrap (default bound 9)
    n = len(client.statuses)
    client.set_configuration({"loopBound": 2}, section="cutespin")
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
    done = await wait_status(client, uri, "done", after=n)
    assert [field(r, "verdict") for r in done.results] == ["verified"]  # 2 trips never wrap 4 stages
    assert codes(client, uri) == []


async def test_severity_override_and_off(client: LanguageClient):
    uri = open_doc(client, WRAP_PARITY)
    await wait_status(client, uri, "done")
    client.set_configuration({"severity": {"CS101": "warning"}}, section="cutespin")
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
    ds = await wait_diagnostics(client, uri, lambda ds: ds and ds[0].severity == T.DiagnosticSeverity.Warning)
    assert [d.code for d in ds] == ["CS101"]
    client.set_configuration({"severity": {"CS101": "off"}}, section="cutespin")
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))
    await wait_diagnostics(client, uri, lambda ds: ds == [])


async def test_initialization_options_fallback_and_bad_values():
    """A client without workspace/configuration: initializationOptions apply; a bad value is
    reported once and replaced by its default."""
    client = await SERVER_CONFIG.start()
    try:
        caps = client_capabilities("neovim")
        caps.workspace.configuration = False
        await client.initialize_session(T.InitializeParams(
            capabilities=caps, initialization_options={"cutespin": {"loopBound": 2, "timeout": "soon"}}))
        client.statuses = []
        client.feature("cutespin/status")(lambda ls, params: ls.statuses.append(params))
        uri = open_doc(client, WRAP_PARITY)
        done = await wait_status(client, uri, "done")
        assert [field(r, "verdict") for r in done.results] == ["verified"]
        [msg] = [m for m in client.messages if "timeout" in m.message]
        assert msg.type == T.MessageType.Warning
        await client.shutdown_session()
    finally:
        await client.stop()


def test_parse_options():
    opts, problems = parse_options({"loopBound": 4, "timeout": 2.5, "memory-mb": 256, "trigger": "onType",
                                    "debounceMs": 100, "severity": {"cs201": "Warning"}, "spin": "/opt/spin"})
    assert problems == []
    assert opts == ServerOptions(loop_bound=4, timeout=2.5, memory_mb=256, trigger="onType", debounce_ms=100,
                                 severity=(("CS201", "warning"),), spin="/opt/spin")
    assert opts.severity_for("CS201") == "warning" and opts.severity_for("CS101") is None
    opts, problems = parse_options({"loopBound": 0, "trigger": "always", "bogus": 1, "severity": {"CS1": "loud"}})
    assert opts == ServerOptions()
    assert len(problems) == 4 and any("bogus" in p for p in problems)
    assert parse_options(None) == (ServerOptions(), [])
    assert parse_options({"cutespin": {"strict": True}})[0].strict is True


def test_editor_defaults_pyproject_and_explicit(tmp_path: Path):
    s = ServerOptions().core_settings(tmp_path / "k.py")
    assert s.timeout == 5.0 and s.memory_mb == 512  # tighter than the CLI's 20 s / 1024 MB
    (tmp_path / "pyproject.toml").write_text("[tool.cutespin]\ntimeout = 9\nloop-bound = 7\n")
    s = ServerOptions().core_settings(tmp_path / "k.py")
    assert s.timeout == 9 and s.loop_bound == 7  # the project's pyproject applies to the editor too
    s = ServerOptions(loop_bound=3).core_settings(tmp_path / "k.py")
    assert s.timeout == 9 and s.loop_bound == 3  # what the user set in the editor wins


@pytest.mark.cutespin_settings({"spin": "/nonexistent/spin"})
async def test_missing_spin_is_shown_once(client: LanguageClient, tmp_path):
    path = tmp_path / "race.py"
    path.write_text(WRAP_PARITY.read_text())
    uri = open_doc(client, path)
    err = await wait_status(client, uri, "error")
    assert err.kind == "tool" and "SPIN was not found" in err.message
    n = len(client.statuses)
    save(client, uri)
    await wait_status(client, uri, "error", after=n)
    assert len([m for m in client.messages if "SPIN was not found" in m.message]) == 1  # no popup storm
    assert list(client.diagnostics.get(uri, [])) == []
