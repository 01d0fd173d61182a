"""A module an open kernel imports changes on disk: the document is re-checked."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from cutespin.lsp.deps import dependency_paths

from .helpers import RACE, open_doc, statuses, wait_diagnostics, wait_for, wait_status


def test_dependency_paths(tmp_path):
    doc = tmp_path / "pkg" / "kern.py"
    text = "import helpers\nfrom .pipes import Ring\nfrom tools.sync import (a,\n    b)\nimport os.path as p\n"
    deps = dependency_paths(text, doc, [tmp_path])
    assert (tmp_path / "pkg" / "helpers.py").resolve() in deps  # next to the document
    assert (tmp_path / "pkg" / "pipes.py").resolve() in deps  # relative import
    assert (tmp_path / "tools" / "sync.py").resolve() in deps
    assert (tmp_path / "tools" / "sync" / "a.py").resolve() in deps
    assert (tmp_path / "os" / "path.py").resolve() in deps
    assert (tmp_path / "unrelated.py").resolve() not in deps


async def test_imported_module_changed_on_disk(client: LanguageClient, tmp_path):
    [reg] = await wait_for(lambda: [r for r in client.registrations
                                    if r.method == T.WORKSPACE_DID_CHANGE_WATCHED_FILES], what="registration")
    assert {w["globPattern"] for w in reg.register_options["watchers"]} == {"**/*.py", "**/pyproject.toml"}
    kernel = tmp_path / "race.py"
    kernel.write_text("from sync_helpers import SIZE\n" + RACE.read_text())
    uri = open_doc(client, kernel)
    await wait_status(client, uri, "done")
    helper, other = tmp_path / "sync_helpers.py", tmp_path / "other.py"
    helper.write_text("SIZE = 32\n")
    other.write_text("X = 1\n")
    n = len(client.statuses)
    client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(changes=[
        T.FileEvent(uri=other.as_uri(), type=T.FileChangeType.Changed)]))
    client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(changes=[
        T.FileEvent(uri=helper.as_uri(), type=T.FileChangeType.Changed)]))
    await wait_status(client, uri, "done", after=n)
    checking = [s for s in statuses(client, uri, "checking")][1:]
    assert [s.reason for s in checking] == ["dependency"]  # once: for the helper, not for other.py


@pytest.mark.cutespin_client("neovim")
async def test_server_watches_disk_itself_when_the_client_cannot(client: LanguageClient, tmp_path):
    """Neovim offers no dynamic file-watch registration: the server's own watcher re-checks."""
    assert not [r for r in client.registrations if r.method == T.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    kernel = tmp_path / "race.py"
    kernel.write_text("from sync_helpers import SIZE\n" + RACE.read_text())
    helper = tmp_path / "sync_helpers.py"
    helper.write_text("SIZE = 32\n")
    uri = open_doc(client, kernel)
    await wait_status(client, uri, "done")
    n = len(client.statuses)
    helper.write_text("SIZE = 64\n")  # a change made outside the editor (git checkout, codegen)
    await wait_status(client, uri, "done", after=n)
    assert [s.reason for s in statuses(client, uri, "checking")][-1] == "dependency"


PKG = Path(__file__).resolve().parents[1] / "fixtures" / "pkg_project" / "mypkg"


async def test_sibling_module_the_model_followed_rechecks_the_kernel(client: LanguageClient, tmp_path):
    """partials.py never names cycle_a, but its model runs cycle_a's code (partials -> cycle_b ->
    cycle_a): a change to cycle_a on disk, or a save of it in the editor, re-checks partials.py.
    The diagnostic of a deadlock inside the sibling helper sits at the call in the document."""
    pkg = tmp_path / "mypkg"
    shutil.copytree(PKG, pkg)
    kernel = pkg / "partials.py"
    uri = open_doc(client, kernel)
    await wait_status(client, uri, "done")
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code in ("CS101", "CS201") for d in ds))
    (d,) = [d for d in ds if d.code in ("CS101", "CS201")]
    assert d.code == "CS101"
    call = next(i for i, line in enumerate(kernel.read_text().splitlines()) if "wait_ready()" in line)
    assert d.range.start.line == call  # at `wait_ready()`, which led into sync.await_phase
    assert "(in sync.py line" in d.message
    assert any(r.location.uri == (pkg / "sync.py").resolve().as_uri() for r in d.related_information)

    n = len(client.statuses)
    client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(changes=[
        T.FileEvent(uri=(pkg / "cycle_a.py").as_uri(), type=T.FileChangeType.Changed)]))
    await wait_status(client, uri, "done", after=n)
    assert [s.reason for s in statuses(client, uri, "checking")][-1] == "dependency"

    n = len(client.statuses)
    sibling = open_doc(client, pkg / "cycle_a.py")
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=sibling)))
    await wait_status(client, uri, "done", after=n)
    assert [s.reason for s in statuses(client, uri, "checking")][-1] == "dependency"
