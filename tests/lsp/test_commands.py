"""cutespin.showPromela, cutespin.showTrace and cutespin.recheck."""
from __future__ import annotations

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import RACE, field, open_copy, statuses, wait_status

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run(client, command, *args):
    return await client.workspace_execute_command_async(T.ExecuteCommandParams(command=command,
                                                                               arguments=list(args)))


async def test_show_promela_and_trace(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    res = await run(client, "cutespin.showPromela", uri, "ScaleHandoff.kernel")
    assert res["qualname"] == "ScaleHandoff.kernel" and res["language"] == "promela"
    assert "proctype" in res["text"] and "init" in res["text"]
    lines = set(res["lineMap"].values())
    assert {56, 62, 64, 67, 68} <= lines  # init, write, arrive, wait, read map back to the source
    n_pml = len(res["text"].splitlines())
    assert all(1 <= int(k) <= n_pml for k in res["lineMap"])
    assert (await run(client, "cutespin.showPromela", uri))["qualname"] == "ScaleHandoff.kernel"

    res = await run(client, "cutespin.showTrace", uri, "ScaleHandoff.kernel#0")
    assert res["code"] == "CS201"
    steps = res["steps"]
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1)) and len(steps) == 11
    assert steps[-1] == {"step": 11, "role": "warp 1", "line": 68, "operation": "reads sRow[0:32] (CTA 0)", "barrier": ""}
    assert res["markdown"].count("\n| ") == 12  # the header rule and all 11 steps: nothing trimmed
    assert await run(client, "cutespin.showTrace", uri, "ScaleHandoff.kernel#7") is None


async def test_recheck(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    res = await run(client, "cutespin.recheck", uri)
    assert res["version"] == 1 and res["cancelled"] is False
    assert res["results"] == [{"kernel": "ScaleHandoff.kernel", "verdict": "counterexample"}]
    # A real re-run (not the per-document cache): a second "checking" status.
    assert len(statuses(client, uri, "checking")) == 2
    assert not [s for s in statuses(client, uri, "done") if field(s, "cached")]
