"""A syntax error mid-edit: one diagnostic says so, the server stays up and recovers."""
from __future__ import annotations

from lsprotocol import types as T
from pytest_lsp import LanguageClient

from .helpers import RACE, open_doc, replace_text, save, wait_status


async def test_syntax_error_then_recovery(client: LanguageClient, tmp_path):
    path = tmp_path / "race.py"
    text = RACE.read_text()
    path.write_text(text)
    uri = open_doc(client, path)
    await wait_status(client, uri, "done")
    broken = text.replace("cute.arch.mbarrier_arrive(ready)", "cute.arch.mbarrier_arrive(ready", 1)
    replace_text(client, uri, 2, broken)
    save(client, uri)
    err = await wait_status(client, uri, "error", version=2)
    assert err.kind == "frontend"
    [d] = client.diagnostics[uri]
    assert d.severity == T.DiagnosticSeverity.Error and d.source == "cutespin"
    assert "syntax error" in d.message and d.code is None
    assert 63 <= d.range.start.line <= 66  # at (or just after) the unclosed call on line 64
    # Still alive: requests are answered, and the fixed text is checked again.
    assert await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=0, character=0))) is None
    replace_text(client, uri, 3, text)
    save(client, uri)
    await wait_status(client, uri, "done", version=3)
    assert [d.code for d in client.diagnostics[uri]] == ["CS201"]
    assert client.messages == []  # no popup for a syntax error
