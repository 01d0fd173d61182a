"""Results stay on the right lines while the text above them changes (before the next check)."""
from __future__ import annotations

from lsprotocol import types as T
from pytest_lsp import LanguageClient

from cutespin.lsp.positions import LineHistory, RangeEdit, WholeEdit

from .helpers import RACE, insert_text, open_doc, wait_diagnostics, wait_status


def test_range_edits():
    h = LineHistory()
    h.record(2, [RangeEdit(0, 0, 0, 0, "a\nb\n")])  # two lines inserted at the top
    assert h.map_line(5, 1) == (7, True)
    assert h.map_line(5, 2) == (5, True)  # already in version 2's coordinates
    h.record(3, [RangeEdit(7, 4, 7, 4, "x")])  # typing on (old) line 5
    assert h.map_line(5, 1) == (7, False) and h.map_line(6, 1) == (8, True)
    h.record(4, [RangeEdit(8, 0, 10, 0, "")])  # two lines deleted
    assert h.map_line(6, 1) == (8, False) and h.map_line(9, 1) == (9, True)
    h.forget_before(3)
    assert [v for v, _ in h.steps] == [4]


def test_line_start_edits():
    assert RangeEdit(3, 0, 3, 0, "new\n").map_line(3) == (4, True)  # a line inserted above it
    assert RangeEdit(3, 0, 3, 0, "x").map_line(3) == (3, False)  # text typed at its start
    assert RangeEdit(2, 5, 3, 0, "").map_line(3) == (2, False)  # joined to the previous line
    assert RangeEdit(2, 0, 3, 0, "").map_line(3) == (2, True)  # the line above deleted


def test_whole_document_changes():
    e = WholeEdit("a\nb\nc\nd\n", "z\na\nb\nC\nd\n")
    assert [e.map_line(i) for i in range(4)] == [(1, True), (2, True), (3, False), (4, True)]


async def test_diagnostics_follow_typing_above(client: LanguageClient):
    uri = open_doc(client, RACE)
    await wait_status(client, uri, "done")
    insert_text(client, uri, 2, 10, 0, "# a\n# b\n# c\n")  # onSave mode: no new check, only moved
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.range.start.line == 70 for d in ds))
    [d] = [d for d in ds if d.code == "CS201"]
    assert d.range.start.character == 29
    assert {r.location.range.start.line + 1 for r in d.related_information} >= {65, 67, 70, 71}
    assert d.data["version"] == 1  # computed on version 1, shown on version 2's lines
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=70, character=35)))
    assert "| 11 | warp 1 | 71 | reads sRow" in hover.contents.value
