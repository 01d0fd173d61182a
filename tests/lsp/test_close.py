"""Closing a document clears its diagnostics; shutting down clears every document's."""
from __future__ import annotations

from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities

from .helpers import RACE, SERVER_CONFIG, close, open_doc, wait_diagnostics, wait_for, wait_status


async def test_close_clears(client: LanguageClient):
    uri = open_doc(client, RACE)
    await wait_status(client, uri, "done")
    assert client.diagnostics[uri]
    close(client, uri)
    await wait_for(lambda: list(client.diagnostics[uri]) == [], what="cleared diagnostics")
    await wait_status(client, uri, "closed")


async def test_shutdown_clears_and_exits_cleanly():
    client = await SERVER_CONFIG.start()
    try:
        await client.initialize_session(T.InitializeParams(capabilities=client_capabilities("neovim")))
        uri = open_doc(client, RACE)
        await wait_diagnostics(client, uri)
        await client.shutdown_session()
        assert list(client.diagnostics[uri]) == []
        assert client._server.returncode == 0
    finally:
        await client.stop()
