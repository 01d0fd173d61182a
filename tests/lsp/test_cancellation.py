"""A newer save supersedes the running check: its SPIN process group is killed, no process is
left behind, and only the newer version's result is published. Closing, and cancelling from the
progress UI, cancel too."""
from __future__ import annotations

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import (RACE, close, descendants, field, insert_text, open_copy, pinned_ring, replace_text, save,
                      server_pid, statuses, wait_diagnostics, wait_for, wait_status)

# A model SPIN needs many seconds for (loop bound 40: `spin -a` alone takes ~20 s), and the same
# kernel checked quickly (bound 2).
SLOW, FAST = pinned_ring(40), pinned_ring(2)
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.cutespin_settings({"timeout": 120})]


async def running_tool(client):
    """Wait until the server runs a SPIN tool (spin, the compiler or pan)."""
    return await wait_for(lambda: [p for p in descendants(server_pid(client))
                                   if p[1] in ("pan", "spin", "tcc", "gcc", "cc")], what="a SPIN child process")


async def no_children(client):
    await wait_for(lambda: not descendants(server_pid(client)), timeout=5, what="no child processes")


async def test_newer_save_kills_the_old_run(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "superseded.py", SLOW)
    await wait_status(client, uri, "checking", version=1)
    old = await running_tool(client)
    # The user edits and saves while SPIN still works on version 1.
    replace_text(client, uri, 2, FAST)
    save(client, uri)
    done = await wait_status(client, uri, "done", version=2, timeout=30)
    assert [field(r, "verdict") for r in done.results] == ["verified"]
    assert [field(r, "version") for r in done.results] == [2]
    # The old run was killed (not left to finish), and nothing else is left running.
    alive = {p[0] for p in descendants(server_pid(client))}
    assert not {pid for pid, _ in old} & alive
    await no_children(client)
    # Version 1 was cancelled and none of its results was published.
    assert statuses(client, uri, "cancelled", version=1)
    assert not statuses(client, uri, "checked", version=1) and not statuses(client, uri, "done", version=1)
    logs = [m.message for m in client.log_messages if m.message.startswith("cutespin: superseded.py ")]
    assert not [m for m in logs if " v1: RowSumTmaRing.kernel:" in m]
    assert len([m for m in logs if " v2: RowSumTmaRing.kernel: verified" in m]) == 1


async def test_close_cancels_and_kills(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "closed.py", SLOW)
    await running_tool(client)
    close(client, uri)
    await wait_status(client, uri, "cancelled", version=1, timeout=10)
    await no_children(client)
    await wait_status(client, uri, "closed")
    assert not statuses(client, uri, "done")


async def test_cancel_from_the_progress_ui(shared_client: LanguageClient, tmp_path):
    client = shared_client
    before = set(client.progress_reports)
    uri = open_copy(client, tmp_path, RACE, "progress_cancelled.py", SLOW)
    await running_tool(client)
    [token] = await wait_for(lambda: [t for t, r in client.progress_reports.items() if r and t not in before],
                             what="progress")
    assert client.progress_reports[token][0].cancellable is True
    client.window_work_done_progress_cancel(T.WorkDoneProgressCancelParams(token=token))
    await wait_status(client, uri, "cancelled", version=1, timeout=10)
    await no_children(client)
    await wait_for(lambda: client.progress_reports[token][-1].kind == "end", timeout=5, what="progress end")


async def test_results_of_the_last_save_stay_while_typing(shared_client: LanguageClient, tmp_path):
    """Saving then typing (no save) neither cancels nor drops the last save's findings."""
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "typing.py")
    save(client, uri)
    insert_text(client, uri, 2, 0, 0, "# typing...\n")
    await wait_status(client, uri, "done")
    assert await wait_diagnostics(client, uri, lambda ds: any(d.code == "CS201" and d.range.start.line == 68
                                                              for d in ds))
