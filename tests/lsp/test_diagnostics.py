"""Push diagnostics: findings with codes, ranges, related steps and data; unmodeled constructs and
inconclusive verdicts; suppression comments; files without kernels."""
from __future__ import annotations

import textwrap

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient

from cutespin.findings import docs_url

from .helpers import RACE, field, open_copy, pinned_ring, save, statuses, wait_diagnostics, wait_status

# One server for the module (each test opens its own documents); a generous timeout for the slow kernel.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.cutespin_settings({"timeout": 120})]

INCONCLUSIVE_SRC = textwrap.dedent("""\
    import cutlass
    import cutlass.cute as cute
    import cutlass.pipeline


    class PipeCopy:
        @cute.jit
        def __call__(self, mA: cute.Tensor):
            self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

        @cute.kernel
        def kernel(self, mA: cute.Tensor):
            smem = cutlass.utils.SmemAllocator()
            bars = smem.allocate_array(cutlass.Int64, num_elems=4)
            pipeline = cutlass.pipeline.PipelineTmaAsync.create(
                barrier_storage=bars, num_stages=2, producer_group=None, consumer_group=None, tx_count=128
            )
            cute.arch.sync_threads()
""")


async def test_race_sample_on_save(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE)
    save(client, uri)
    done = await wait_status(client, uri, "done")
    ds = client.diagnostics[uri]
    [d] = [d for d in ds if d.code == "CS201"]
    assert d.source == "cutespin"
    assert d.severity == T.DiagnosticSeverity.Error
    assert d.code_description.href == docs_url("CS201")
    assert d.range.start.line == 67 and d.range.start.character == 29  # 68:30, 1-based
    assert d.range.end.line == 67
    assert "data race" in d.message
    # The interleaving: every step located in the file, the write, arrive, wait and read among them.
    related = d.related_information
    assert related and all(r.location.uri == uri for r in related)
    lines = {r.location.range.start.line + 1 for r in related}
    assert {62, 64, 67, 68} <= lines
    assert any("arrives on ready" in r.message and "pending 1" in r.message for r in related)
    assert d.data["kernel"] == "ScaleHandoff.kernel" and d.data["id"] == "ScaleHandoff.kernel#0"
    assert d.data["version"] == 1
    assert d.data["fixesPending"] is False
    assert [f["preferred"] for f in d.data["fixes"]] == [True, False]
    assert [field(r, "verdict") for r in done.results] == ["counterexample"]
    # The finding was published before its fixes were re-verified (then published again with them).
    checked = statuses(client, uri, "checked")[-1]
    assert checked.fixesPending == 1
    logs = [m.message for m in client.log_messages]
    result_log = next(i for i, m in enumerate(logs) if "ScaleHandoff.kernel: counterexample in" in m)
    fixes_log = next(i for i, m in enumerate(logs) if "fix(es) verified" in m)
    assert result_log < fixes_log


async def test_each_kernel_is_published_as_it_finishes(shared_client: LanguageClient, tmp_path):
    """A fast kernel's finding shows while a slow kernel of the same file is still being checked."""
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "two_kernels.py", RACE.read_text() + "\n\n" + pinned_ring(22))
    ds = await wait_diagnostics(client, uri)
    assert [d.code for d in ds] == ["CS201"]
    assert not statuses(client, uri, "checked") and not statuses(client, uri, "done")  # the ring still runs
    done = await wait_status(client, uri, "done")
    assert [(field(r, "kernel"), field(r, "verdict")) for r in done.results] == [
        ("ScaleHandoff.kernel", "counterexample"), ("RowSumTmaRing.kernel", "verified")]


async def test_unmodeled_and_inconclusive(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "pipe_copy.py", INCONCLUSIVE_SRC)
    ds = await wait_diagnostics(client, uri)
    by_code = {d.code: d for d in ds}
    assert set(by_code) == {"CS901", "CS902"}
    unmodeled, inconclusive = by_code["CS901"], by_code["CS902"]
    assert unmodeled.severity == T.DiagnosticSeverity.Information
    assert unmodeled.range.start.line + 1 == 15 and "PipelineTmaAsync" in unmodeled.message
    assert inconclusive.range.start.line + 1 == 12  # the kernel's def line
    assert "inconclusive" in inconclusive.message and "unmodeled" in inconclusive.message


async def test_suppression_comment(shared_client: LanguageClient, tmp_path):
    client = shared_client
    lines = RACE.read_text().splitlines()
    lines[67] += "  # cutespin: ignore[CS201]"
    uri = open_copy(client, tmp_path, RACE, "race_ignored.py", "\n".join(lines) + "\n")
    await wait_status(client, uri, "done")
    ds = client.diagnostics[uri]
    assert [d.code for d in ds] == ["CS902"]
    assert "suppressed" in ds[0].message


async def test_file_without_kernels_gets_nothing(shared_client: LanguageClient, tmp_path):
    client = shared_client
    uri = open_copy(client, tmp_path, RACE, "plain.py", "import os\n\n\ndef f(x):\n    return os.path.join(x, 'y')\n")
    save(client, uri)
    await wait_status(client, uri, "idle")
    # A kernel file opened afterwards is checked: the server was not just slow.
    race = open_copy(client, tmp_path, RACE)
    await wait_status(client, race, "done")
    assert client.diagnostics.get(uri, []) == []
    assert not statuses(client, uri, "checking")
