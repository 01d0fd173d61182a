"""An unchanged re-save is answered from cache; a change that leaves the model alone reuses
SPIN's result (the engine cache, keyed by the lowered model)."""
from __future__ import annotations

import pytest
from pytest_lsp import LanguageClient

from .helpers import field, open_doc, pinned_ring, replace_text, save, statuses, wait_status

RING = pinned_ring(22)  # `spin -a` alone takes a few seconds on this model


@pytest.mark.cutespin_settings({"timeout": 120})
async def test_unchanged_resave_is_served_from_cache(client: LanguageClient, tmp_path):
    path = tmp_path / "ring.py"
    path.write_text(RING)
    uri = open_doc(client, path)
    first = await wait_status(client, uri, "done")
    assert first.cached is False and first.seconds > 1.0

    n = len(client.statuses)
    save(client, uri)
    again = await wait_status(client, uri, "done", after=n)
    assert again.cached is True 
    assert any("served from cache" in m.message for m in client.log_messages)
    assert [field(r, "verdict") for r in again.results] == ["verified"]
    assert not statuses(client, uri, "checking")[1:]  # nothing was re-run

    # A comment above the kernel changes the text but not the model: SPIN's result is reused.
    replace_text(client, uri, 2, "# a comment\n" + RING)
    n = len(client.statuses)
    save(client, uri)
    edited = await wait_status(client, uri, "done", after=n)
    assert edited.cached is False
    assert [field(r, "verdict") for r in edited.results] == ["verified"]
    v2 = [m.message for m in client.log_messages if "ring.py v2: RowSumTmaRing.kernel" in m.message]
    assert v2 and "SPIN cached" in v2[-1]  # the engine did not run again (timings: bench/latency.py)
