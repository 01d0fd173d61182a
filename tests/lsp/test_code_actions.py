"""Code actions: verified fixes as quick fixes with a versioned edit (one preferred), and
`source.fixAll.cutespin`; applying the edit gives a kernel the checker verifies."""
from __future__ import annotations

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from cutespin import api
from cutespin.config import Settings

from .helpers import RACE, apply_text_edits, insert_text, open_copy, wait_diagnostics, wait_status

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def code_actions(client, uri, diagnostics, only=None, rng=None):
    rng = rng or diagnostics[0].range
    return await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=rng,
        context=T.CodeActionContext(diagnostics=diagnostics, only=only))) or []


def check_clean(text: str):
    fr = api.check_source(text, str(RACE), Settings(), with_fixes=False)
    assert fr.error is None
    [kr] = fr.kernels
    assert kr.findings == [] and kr.verdict == "verified", (kr.verdict, kr.reason)


async def test_quick_fixes_and_fix_all_apply_and_recheck_clean(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    diags = [d for d in client.diagnostics[uri] if d.code == "CS201"]
    actions = await code_actions(client, uri, diags, only=[T.CodeActionKind.QuickFix])
    assert [a.kind for a in actions] == [T.CodeActionKind.QuickFix] * 2
    assert [bool(a.is_preferred) for a in actions] == [True, False]
    assert actions[0].title.startswith("Add cute.arch.sync_warp() before the elected arrive")
    assert actions[0].diagnostics[0].code == "CS201"
    text = RACE.read_text()
    for action in actions:
        [doc_edit] = action.edit.document_changes
        assert doc_edit.text_document.uri == uri and doc_edit.text_document.version == 1
        patched = apply_text_edits(text, doc_edit.edits)
        assert patched != text
        check_clean(patched)
    # source.fixAll.cutespin: the preferred fix of every finding; nothing for other kinds.
    diags = list(client.diagnostics[uri])
    [action] = await code_actions(client, uri, diags, only=[T.CodeActionKind.SourceFixAll])
    assert action.kind == "source.fixAll.cutespin"
    [doc_edit] = action.edit.document_changes
    check_clean(apply_text_edits(RACE.read_text(), doc_edit.edits))
    assert await code_actions(client, uri, diags, only=["refactor"]) == []


async def test_fix_follows_lines_inserted_above(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    text = "# one\n# two\n" + RACE.read_text()
    insert_text(client, uri, 2, 0, 0, "# one\n# two\n")  # typed, not saved
    diags = await wait_diagnostics(client, uri, lambda ds: any(d.range.start.line == 69 for d in ds))
    [d] = [d for d in diags if d.code == "CS201"]
    actions = await code_actions(client, uri, [d], only=[T.CodeActionKind.QuickFix])
    assert actions and all(a.edit.document_changes[0].text_document.version == 2 for a in actions)
    check_clean(apply_text_edits(text, actions[0].edit.document_changes[0].edits).split("\n", 2)[2])


async def test_no_fix_offered_once_its_lines_were_edited(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    await wait_status(client, uri, "done")
    d = next(d for d in client.diagnostics[uri] if d.code == "CS201")
    insert_text(client, uri, 2, 62, 12, "x = 1; ")  # the line the sync_warp fix inserts before
    assert await code_actions(client, uri, [d], only=[T.CodeActionKind.QuickFix]) == []
