"""Watching files on disk for clients that cannot do it for us.

When the client offers dynamic registration of `workspace/didChangeWatchedFiles`, the server asks
it to watch `**/*.py` and `pyproject.toml` and this module is unused. Otherwise (Neovim 0.12, for
instance) a watchdog observer watches the workspace folders and the folders of open documents,
and hands every changed Python module or pyproject.toml to the event loop, where the same
"re-check who depends on it" logic runs.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Callable

log = logging.getLogger("cutespin.lsp")


def interesting(path: str) -> bool:
    p = Path(path)
    return p.suffix == ".py" or p.name == "pyproject.toml"


class DiskWatcher:
    """A watchdog observer over a growing set of folders; callbacks run on `loop`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[Path], None]):
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        self.loop = loop
        self.callback = callback
        self.roots: list = []
        self.observer = Observer()
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):
                if event.is_directory or event.event_type not in ("modified", "created", "moved", "deleted"):
                    return
                path = getattr(event, "dest_path", "") or event.src_path
                if interesting(path):
                    watcher.loop.call_soon_threadsafe(watcher.callback, Path(path))

        self.handler = Handler()
        self.observer.daemon = True
        self.observer.start()

    def watch(self, folder: Path) -> None:
        folder = folder.resolve()
        if not folder.is_dir() or any(folder == r or r in folder.parents for r in self.roots):
            return
        try:
            self.observer.schedule(self.handler, str(folder), recursive=True)
            self.roots.append(folder)
            log.info("watching %s for changes made outside the editor", folder)
        except OSError as e:  # too many watches, permissions: the editor still works without it
            log.info("cannot watch %s: %s", folder, e)

    def stop(self) -> None:
        self.observer.stop()
