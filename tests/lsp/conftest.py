"""pytest-lsp fixtures: `cutespin serve --stdio` in a subprocess, driven like VS Code would.

Settings for a test's server: `@pytest.mark.cutespin_settings({...})` (answered through
workspace/configuration). LSP specification warnings from pytest-lsp are errors here.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities

from .helpers import ROOT, SERVER_CONFIG


def pytest_configure(config):
    config.addinivalue_line("markers", "cutespin_settings(dict): settings the test's server is started with")
    config.addinivalue_line("markers", "cutespin_client(name): the client whose capabilities to send "
                                       "(pytest-lsp snapshot name; default visual-studio-code)")


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"))
            item.add_marker(pytest.mark.usefixtures("require_spin"))


async def _start(lsp_client: LanguageClient, request):
    marker = request.node.get_closest_marker("cutespin_settings")
    lsp_client.set_configuration(marker.args[0] if marker else {}, section="cutespin")
    # What VS Code would also answer: status items, code lens refreshes, dynamic registrations.
    lsp_client.statuses = []
    lsp_client.lens_refreshes = 0
    lsp_client.hint_refreshes = 0
    lsp_client.registrations = []
    lsp_client.feature("cutespin/status")(lambda ls, params: ls.statuses.append(params))

    @lsp_client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls, params):
        ls.lens_refreshes += 1

    @lsp_client.feature(T.WORKSPACE_INLAY_HINT_REFRESH)
    def hint_refresh(ls, params):
        ls.hint_refreshes += 1

    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def register(ls, params: T.RegistrationParams):
        ls.registrations.extend(params.registrations)

    which = request.node.get_closest_marker("cutespin_client")
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=client_capabilities(which.args[0] if which else "visual-studio-code"), root_uri=ROOT.as_uri(),
        workspace_folders=[T.WorkspaceFolder(uri=ROOT.as_uri(), name="cutespin")]))


@pytest_lsp.fixture(config=SERVER_CONFIG)
async def client(lsp_client: LanguageClient, request):
    """A fresh server for one test."""
    await _start(lsp_client, request)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER_CONFIG, scope="module")
async def shared_client(lsp_client: LanguageClient, request):
    """One server for a whole test module (its tests use distinct documents and mark themselves
    `pytest.mark.asyncio(loop_scope="module")`): server start-up is most of a short test's time."""
    await _start(lsp_client, request)
    yield
    await lsp_client.shutdown_session()
