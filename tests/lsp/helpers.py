"""Driving the server from tests: documents, waiting for results, the server's child processes."""
from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from lsprotocol import types as T
from pytest_lsp import ClientServerConfig

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
RACE = SAMPLES / "elected_handoff_race.py"  # CS201 at 68:30, def line 42
RING_OK = SAMPLES / "tma_ring_ok.py"  # verified; def line 52 (decorator 51)
WRAP_PARITY = SAMPLES / "tma_ring_wrap_parity.py"  # CS101 at line 95 when the ring wraps

SERVER_CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "cutespin", "serve", "--stdio"],
    server_env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "server")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))},
)
WAIT = 60.0  # seconds: generous, the machine may be busy


def pinned_ring(loop: int) -> str:
    """tma_ring_ok.py with its runtime loop bound pinned: the search grows with it."""
    text = RING_OK.read_text()
    return text.replace("    @cute.kernel\n", f"    # cutespin: loop={loop}\n    @cute.kernel\n", 1)


def field(obj, name, default=None):
    """A field of a notification payload (the test client turns unknown objects into tuples)."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def open_doc(client, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri, language_id="python", version=version, text=path.read_text() if text is None else text)))
    return uri


def open_copy(client, tmp_path: Path, src: Path, name: str | None = None, text: str | None = None) -> str:
    """Open a copy of `src` (or `text`) under tmp_path: each test gets its own document, so tests
    can share one server."""
    path = tmp_path / (name or src.name)
    path.write_text(src.read_text() if text is None else text)
    return open_doc(client, path)


def replace_text(client, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))


def insert_text(client, uri: str, version: int, line: int, character: int, text: str) -> None:
    pos = T.Position(line=line, character=character)
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangePartial(range=T.Range(start=pos, end=pos), text=text)]))


def save(client, uri: str) -> None:
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))


def close(client, uri: str) -> None:
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))


async def wait_for(predicate, timeout: float = WAIT, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def statuses(client, uri: str, state: str | None = None, version: int | None = None) -> list:
    return [s for s in client.statuses if field(s, "uri") == uri and (state is None or field(s, "state") == state)
            and (version is None or field(s, "version") == version)]


async def wait_status(client, uri: str, state: str = "done", version: int | None = None, after: int = 0,
                      timeout: float = WAIT):
    """The first status notification `state` for the document (after the first `after` ones)."""
    def found():
        hits = [s for s in client.statuses[after:] if field(s, "uri") == uri and field(s, "state") == state
                and (version is None or field(s, "version") == version)]
        return hits[0] if hits else None
    return await wait_for(found, timeout, f"status {state!r} of {uri} (version {version})")


async def wait_diagnostics(client, uri: str, predicate=lambda ds: bool(ds), timeout: float = WAIT) -> list:
    def found():
        ds = client.diagnostics.get(uri)
        return (list(ds),) if ds is not None and predicate(list(ds)) else None
    return (await wait_for(found, timeout, f"diagnostics of {uri}"))[0]


def descendants(pid: int) -> list:
    """(pid, command name) of every live descendant of a process (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in ("Z", "X"):  # zombies and dead entries are gone already
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def server_pid(client) -> int:
    return client._server.pid


def apply_text_edits(text: str, edits) -> str:
    """Apply LSP TextEdits (all relative to the original text) to ASCII text."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def offset(p: T.Position) -> int:
        return starts[min(p.line, len(lines))] + p.character

    out = text
    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        out = out[:offset(e.range.start)] + e.new_text + out[offset(e.range.end):]
    return out
