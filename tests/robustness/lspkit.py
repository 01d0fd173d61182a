"""Start `cutespin serve` for a robustness test with its own environment (PATH with fake tools,
a private TMPDIR) and settings, and drive it like an editor."""
from __future__ import annotations

import asyncio
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, client_capabilities

from ..lsp.helpers import SERVER_CONFIG, field
from ..lsp.helpers import wait_for as wait_until

FINAL = ("done", "error", "idle")  # a check that ran to its end (cancelled ones are superseded)


@asynccontextmanager
async def server(root: Path, settings: dict | None = None, env: dict | None = None, stderr_log: Path | None = None):
    """A started, initialised server whose workspace is `root`; shut down (and checked to exit)
    afterwards. `client.statuses` collects `cutespin/status` notifications."""
    server_env = {**SERVER_CONFIG.server_env, **(env or {})}
    command = list(SERVER_CONFIG.server_command)
    if stderr_log is not None:
        command += ["--log-file", str(stderr_log)]
    client = await ClientServerConfig(server_command=command, server_env=server_env).start()
    client.set_configuration(settings or {}, section="cutespin")
    client.statuses = []
    client.feature("cutespin/status")(lambda ls, params: ls.statuses.append(params))
    client.feature(T.WORKSPACE_CODE_LENS_REFRESH)(lambda ls, params: None)
    client.feature(T.WORKSPACE_INLAY_HINT_REFRESH)(lambda ls, params: None)
    client.feature(T.CLIENT_REGISTER_CAPABILITY)(lambda ls, params: None)
    await client.initialize_session(T.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri(),
        workspace_folders=[T.WorkspaceFolder(uri=root.as_uri(), name="ws")]))
    try:
        yield client
    finally:
        try:
            await asyncio.wait_for(client.shutdown_session(), 30)
        finally:
            await client.stop()


def server_pid(client) -> int:
    return client._server.pid


def open_text(client, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))


def save(client, uri: str) -> None:
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))


def close(client, uri: str) -> None:
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))


def final_status(client, uri: str, version: int | None = None):
    """The document's last status, when it is final (done/error/idle) and, if given, about that
    version: a check of that text ran to its end and nothing about the document came after."""
    hits = [s for s in client.statuses if field(s, "uri") == uri]
    if not hits or field(hits[-1], "state") not in FINAL:
        return None
    if version is not None and field(hits[-1], "version") != version:
        return None
    return hits[-1]


async def wait_final(client, uri: str, version: int | None = None, timeout: float = 60.0):
    return await wait_until(lambda: final_status(client, uri, version), timeout,
                            f"a final status of {uri} (version {version})")


async def still_serving(client, uri: str) -> None:
    """The server answers requests on a document (it is alive and its loop is free)."""
    doc = T.TextDocumentIdentifier(uri=uri)
    rng = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=5000, character=0))
    await asyncio.wait_for(client.text_document_hover_async(
        T.HoverParams(text_document=doc, position=T.Position(line=0, character=0))), 30)
    await asyncio.wait_for(client.text_document_code_lens_async(T.CodeLensParams(text_document=doc)), 30)
    await asyncio.wait_for(client.text_document_inlay_hint_async(T.InlayHintParams(text_document=doc, range=rng)), 30)
    await asyncio.wait_for(client.text_document_code_action_async(T.CodeActionParams(
        text_document=doc, range=rng, context=T.CodeActionContext(diagnostics=[]))), 30)


PYTHON_DIR = str(Path(sys.executable).parent)


def toolbox(folder: Path, tools: dict) -> str:
    """A folder holding exactly the given tools (name -> the real executable to link, or the text
    of a script to write), and the PATH that has only it (plus this Python's folder): a `spin`
    that crashes, no compiler, a compiler that builds a pan which segfaults..."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, what in tools.items():
        dest = folder / name
        if os.path.isabs(what) and os.path.exists(what):
            dest.symlink_to(what)
        else:
            dest.write_text(what)
            dest.chmod(0o755)
    return os.pathsep.join([str(folder), PYTHON_DIR])
