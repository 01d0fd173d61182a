"""Inlay hints after each barrier initialisation: derived arrivals per phase vs the init count."""
from __future__ import annotations

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import RACE, SAMPLES, open_doc, wait_for, wait_status

WRONG_COUNT = SAMPLES / "wrong_arrive_count.py"  # empty_bar: init 64, three warps of 32 arrive


async def hints(client, uri, last_line=400):
    return await client.text_document_inlay_hint_async(T.InlayHintParams(
        text_document=T.TextDocumentIdentifier(uri=uri),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=last_line, character=0))))


@pytest.mark.cutespin_client("neovim")
async def test_arrivals_per_phase(client: LanguageClient):
    race, wrong = open_doc(client, RACE), open_doc(client, WRONG_COUNT)
    await wait_status(client, race, "done")
    await wait_status(client, wrong, "done")
    [h] = await hints(client, race)
    assert h.label == "cutespin: 1 arrival/phase = init 1"
    assert h.position == T.Position(line=55, character=49)  # after `mbarrier_init(ready, 1)`
    by_line = {h.position.line + 1: h.label for h in await hints(client, wrong)}
    assert by_line[75] == "cutespin: 96 arrivals/phase ≠ init 64 (×2 barriers)"
    assert by_line[73] == "cutespin: 1 arrival/phase = init 1 (×2 barriers)"
    assert list(await hints(client, wrong, last_line=10)) == []
    await wait_for(lambda: client.hint_refreshes > 0, what="an inlay hint refresh")
