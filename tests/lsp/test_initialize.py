"""Capabilities, and `cutespin serve` on the command line (--stdio, --log-file, -v, exit codes)."""
from __future__ import annotations

import json
import subprocess
import sys

from lsprotocol import types as T
from pytest_lsp import client_capabilities

from .helpers import SERVER_CONFIG


async def test_capabilities():
    client = await SERVER_CONFIG.start()
    try:
        caps = client_capabilities("visual-studio-code")
        res = await client.initialize_session(T.InitializeParams(capabilities=caps))
        caps = res.capabilities
        assert res.server_info.name == "cutespin"
        assert caps.text_document_sync.open_close and caps.text_document_sync.save
        assert caps.text_document_sync.change == T.TextDocumentSyncKind.Incremental
        assert caps.hover_provider and caps.code_lens_provider
        assert set(caps.code_action_provider.code_action_kinds) == {"quickfix", "source.fixAll.cutespin"}
        assert set(caps.execute_command_provider.commands) == {
            "cutespin.showPromela", "cutespin.showTrace", "cutespin.recheck"}
        assert caps.diagnostic_provider is None  # push diagnostics only
        await client.shutdown_session()
    finally:
        await client.stop()


def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_serve_command_line(tmp_path):
    log = tmp_path / "server.log"
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {},
                                                                       "rootUri": None}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    p = subprocess.run([sys.executable, "-m", "cutespin", "serve", "--stdio", "--log-file", str(log), "-v"],
                       input=b"".join(_frame(m) for m in msgs), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert b'"name":"cutespin"' in p.stdout.replace(b" ", b"")  # only JSON-RPC on stdout
    assert p.stderr == b""  # the log went to the file
    text = log.read_text()
    assert "cutespin 0.1.0 language server starting" in text and "DEBUG" in text


def test_exit_without_shutdown_is_an_error(tmp_path):
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}},
            {"jsonrpc": "2.0", "method": "exit"}]
    p = subprocess.run([sys.executable, "-m", "cutespin", "serve"], input=b"".join(_frame(m) for m in msgs),
                       capture_output=True, timeout=60)
    assert p.returncode == 1
