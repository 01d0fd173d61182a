"""$/progress (begin, a report per kernel, end), the cutespin/status notification and
window/logMessage timings."""
from __future__ import annotations

from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities

from .helpers import RACE, SERVER_CONFIG, open_doc, save, statuses, wait_status


async def test_progress_begin_report_end(client: LanguageClient):
    uri = open_doc(client, RACE)
    save(client, uri)
    await wait_status(client, uri, "done")
    reports = [r for r in client.progress_reports.values() if r and r[-1].kind == "end"]
    assert reports
    kinds = [[v.kind for v in r] for r in reports]
    assert all(k[0] == "begin" and k[-1] == "end" for k in kinds)
    done = next(r for r in reports if "1 finding" in (r[-1].message or ""))
    assert done[0].title == "cutespin" and done[0].cancellable is True
    assert any(v.kind == "report" and v.message == "ScaleHandoff.kernel: counterexample" for v in done)
    # The superseded first run (open, then save) ended its progress too.
    assert all(r[-1].kind == "end" for r in client.progress_reports.values())


async def test_status_and_log_messages(client: LanguageClient):
    uri = open_doc(client, RACE)
    done = await wait_status(client, uri, "done")
    states = [s.state for s in statuses(client, uri)]
    assert states[0] == "checking" and "checked" in states and states[-1] == "done"
    assert done.findings == 1 and done.kernels == 1 and done.seconds > 0
    logs = [m.message for m in client.log_messages]
    assert any(m.startswith("cutespin: elected_handoff_race.py v1: ScaleHandoff.kernel: counterexample in ")
               and "states)" in m for m in logs)
    assert any("checked: 1 kernel, 1 finding in" in m for m in logs)
    assert client.messages == []  # nothing popped up


async def test_no_progress_without_client_support():
    client = await SERVER_CONFIG.start()
    try:
        caps = client_capabilities("visual-studio-code")
        caps.window.work_done_progress = False
        await client.initialize_session(T.InitializeParams(capabilities=caps))
        client.statuses = []
        client.feature("cutespin/status")(lambda ls, params: ls.statuses.append(params))
        uri = open_doc(client, RACE)
        await wait_status(client, uri, "done")
        assert client.progress_reports == {}
        await client.shutdown_session()
    finally:
        await client.stop()
