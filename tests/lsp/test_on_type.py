"""trigger = onType: a pause in typing starts a check without saving; bursts are debounced."""
from __future__ import annotations

import pytest
from pytest_lsp import LanguageClient

from .helpers import RACE, open_doc, replace_text, statuses, wait_status

FIXED = RACE.read_text().replace(
    "            with cute.arch.elect_one():\n                cute.arch.mbarrier_arrive(ready)",
    "            cute.arch.sync_warp()\n            with cute.arch.elect_one():\n"
    "                cute.arch.mbarrier_arrive(ready)")


@pytest.mark.cutespin_settings({"trigger": "onType", "debounceMs": 150})
async def test_checks_after_typing_pauses(client: LanguageClient, tmp_path):
    assert FIXED != RACE.read_text()
    path = tmp_path / "race.py"
    path.write_text(RACE.read_text())
    uri = open_doc(client, path)
    await wait_status(client, uri, "done", version=1)
    assert [d.code for d in client.diagnostics[uri]] == ["CS201"]
    for v in range(2, 6):  # a burst of edits: only the last version is checked
        replace_text(client, uri, v, FIXED if v == 5 else RACE.read_text() + f"# {v}\n")
    done = await wait_status(client, uri, "done", version=5)
    assert done.findings == 0 and list(client.diagnostics[uri]) == []
    assert [s.version for s in statuses(client, uri, "checking")] == [1, 5]
