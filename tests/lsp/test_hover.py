"""Hover: the interleaving through a line as a Markdown table; a kernel's verdict, bounds and
assumptions on its def line and, when verified, on its barrier lines."""
from __future__ import annotations

from urllib.parse import unquote

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import RACE, RING_OK, open_copy, wait_status

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def hover(client, uri, line1, character=8):
    return await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=line1 - 1, character=character)))


async def test_hover_on_a_counterexample_line(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    h = await hover(client, uri, 68, 35)
    assert h.contents.kind == T.MarkupKind.Markdown
    md = h.contents.value
    assert "CS201" in md and "data race" in md
    assert "| step | role | line | operation | barrier after |" in md
    rows = [r for r in md.splitlines() if r.startswith("| ") and r[2:3].isdigit()]
    # Trimmed: not all 11 steps, but the write, the elected arrive, the wait and the failing read.
    assert 4 <= len(rows) < 11
    assert "steps not shown*" in md
    assert any("| 62 | writes sRow" in r for r in rows)
    assert any("| 64 | arrives on ready (CTA 0) (1 arrival) | pending 1, tx 0, phase 1 |" in r for r in rows)
    assert rows[-1].startswith("| 11 | warp 1 | 68 | reads sRow")
    # A command link to the full trace.
    link = md[md.index("(command:cutespin.showTrace?") + 1:md.rindex(")")]
    assert unquote(link.split("?", 1)[1]) == f'["{uri}", "ScaleHandoff.kernel#0"]'
    # Any line of the interleaving hovers the same finding: the elected arrive is step 8.
    h = await hover(client, uri, 64, 20)
    assert "CS201" in h.contents.value and "| 8 |" in h.contents.value
    # A line off the trace has no hover; the def line shows the kernel's verdict.
    assert await hover(client, uri, 45) is None  # `bidx, _, _ = cute.arch.block_idx()`
    assert "`ScaleHandoff.kernel`: counterexample (CS201)" in (await hover(client, uri, 42)).contents.value


async def test_hover_on_a_verified_kernel(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RING_OK)
    await wait_status(client, uri, "done")
    md = (await hover(client, uri, 52)).contents.value  # def line (the decorator is on 51)
    assert "`RowSumTmaRing.kernel`: verified within loop bound 9, 4 stages, cluster 1" in md
    assert "states" in md and "Assumptions:" in md
    assert "takes every trip count in [1, 2, 3, 4, 5, 6, 7, 8, 9]" in md
    # A barrier wait inside the verified kernel shows the same verdict.
    text = RING_OK.read_text().splitlines()
    wait_line = next(i + 1 for i, t in enumerate(text) if "mbarrier_wait" in t)
    assert "verified within loop bound 9" in (await hover(client, uri, wait_line, 20)).contents.value
