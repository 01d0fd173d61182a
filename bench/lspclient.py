"""A tiny LSP client over stdio for the latency benchmark: starts `python -m cutespin serve`,
speaks JSON-RPC with Content-Length framing, answers the server's requests at once (as an editor
would) and timestamps every message from the server when its last byte is read."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What an editor like VS Code advertises that changes the server's behaviour on the measured
# path: pulled configuration, work-done progress (a round trip before each check) and refreshes.
CAPABILITIES = {
    "workspace": {"configuration": True, "workspaceFolders": True,
                  "didChangeConfiguration": {"dynamicRegistration": True},
                  "didChangeWatchedFiles": {"dynamicRegistration": True},
                  "codeLens": {"refreshSupport": True}, "inlayHint": {"refreshSupport": True}},
    "textDocument": {"synchronization": {"didSave": True, "dynamicRegistration": True},
                     "publishDiagnostics": {"relatedInformation": True, "versionSupport": True}},
    "window": {"workDoneProgress": True},
}


class Client:
    def __init__(self, settings: dict | None = None, root: Path = ROOT):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "server")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
        self.proc = subprocess.Popen([sys.executable, "-m", "cutespin", "serve", "--stdio"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(root))
        self.settings = settings or {}
        self.root = root
        self.messages: list = []  # (arrival time, message) from the server, in order
        self.cond = threading.Condition()
        self.next_id = 0
        self.lock = threading.Lock()
        self.versions: dict = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # ------------------------------------------------------------------------------ transport
    def _send(self, msg: dict) -> float:
        body = json.dumps(msg).encode()
        with self.lock:
            t = time.monotonic()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()
        return t

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            t = time.monotonic()
            msg = json.loads(body)
            if "method" in msg and "id" in msg:
                self._answer(msg)
            with self.cond:
                self.messages.append((t, msg))
                self.cond.notify_all()

    def _answer(self, msg):
        if msg["method"] == "workspace/configuration":
            result = [self.settings for _ in msg["params"]["items"]]
        else:  # progress create, registrations, refreshes: accepted
            result = None
        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def request(self, method: str, params, timeout: float = 60.0):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        _, msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout=timeout, what=method)
        return msg.get("result")

    def notify(self, method: str, params) -> float:
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, pred, start: int = 0, timeout: float = 120.0, what: str = "message"):
        """The first (time, message) from index `start` on that satisfies pred."""
        deadline = time.monotonic() + timeout
        i = start
        with self.cond:
            while True:
                while i < len(self.messages):
                    t, m = self.messages[i]
                    if pred(m):
                        return t, m
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {what} within {timeout} s")
                self.cond.wait(left)

    def mark(self) -> int:
        with self.cond:
            return len(self.messages)

    def since(self, start: int) -> list:
        with self.cond:
            return list(self.messages[start:])

    # ------------------------------------------------------------------------------ LSP
    def initialize(self):
        uri = self.root.as_uri()
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": CAPABILITIES,
                                    "workspaceFolders": [{"uri": uri, "name": self.root.name}]})
        self.notify("initialized", {})

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.versions[uri] = 1
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        return uri

    def replace(self, uri: str, text: str) -> int:
        self.versions[uri] += 1
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                               "contentChanges": [{"text": text}]})
        return self.versions[uri]

    def edit_line(self, uri: str, line: int, old_len: int, text: str) -> int:
        """Replace one line's content (0-based line, ASCII) as an editor's incremental change."""
        self.versions[uri] += 1
        rng = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": old_len}}
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                               "contentChanges": [{"range": rng, "text": text}]})
        return self.versions[uri]

    def save(self, uri: str) -> float:
        return self.notify("textDocument/didSave", {"textDocument": {"uri": uri}})

    def close(self, uri: str):
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def shutdown(self):
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait()

    def pid(self) -> int:
        return self.proc.pid


def is_status(uri: str, state: str, version: int | None = None):
    def pred(m):
        if m.get("method") != "cutespin/status":
            return False
        p = m["params"]
        return p.get("uri") == uri and p.get("state") == state and (version is None or p.get("version") == version)
    return pred


def is_diagnostics(uri: str):
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
