"""Code lens above each kernel: verdict, states explored, time; and "re-check"."""
from __future__ import annotations

import re

from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import RACE, RING_OK, open_doc, wait_status


async def lenses(client, uri):
    return await client.text_document_code_lens_async(T.CodeLensParams(
        text_document=T.TextDocumentIdentifier(uri=uri)))


async def test_lenses_for_a_counterexample_and_a_verified_kernel(client: LanguageClient):
    race = open_doc(client, RACE)
    ring = open_doc(client, RING_OK)
    await wait_status(client, race, "done")
    await wait_status(client, ring, "done")
    verdict, again = await lenses(client, race)
    assert verdict.range.start.line == 41  # the def line
    assert re.fullmatch(r"cutespin: counterexample \(CS201\) · \d+ states · \d+\.\d\d s", verdict.command.title)
    assert verdict.command.command == "cutespin.showTrace"
    assert list(verdict.command.arguments) == [race, "ScaleHandoff.kernel#0"]
    assert again.command.title == "re-check" and again.command.command == "cutespin.recheck"
    verdict, _ = await lenses(client, ring)
    assert verdict.range.start.line == 51
    assert verdict.command.title.startswith("cutespin: verified within loop bound 9, 4 stages, cluster 1 · ")
    assert verdict.command.command == "cutespin.showPromela"
    assert client.lens_refreshes >= 1  # the client was asked to refresh lenses after each check
