"""Soak: a long editing session. Rapid didChange / didSave cycles over ten documents whose bugs
appear and disappear (races, deadlocks, overruns, scopes, syntax errors, unmodeled calls, a file
that stops being a kernel), with typing above the results in between. At the end the server is
alive and answering, its memory is flat, no SPIN process or temp folder is left, and every
document's diagnostics equal a fresh server's check of its final text: nothing stale.

Size: CUTESPIN_SOAK_CYCLES (default 500) over CUTESPIN_SOAK_DOCS (default 10) documents, e.g.
`CUTESPIN_SOAK_CYCLES=20000 python3 -m pytest -m soak` for a day's worth of saves.
"""
from __future__ import annotations

import asyncio
import os
import random
import time

import pytest
from lsprotocol import types as T

from .conftest import cutespin_temp_dirs, descendants, env_int, rss_kb
from .inputs import HANDOFF, RACE, SMALL_KERNELS
from .lspkit import change, final_status, open_text, save, server, server_pid, still_serving, wait_until
from .mutate import SAMPLES
from ..lsp.helpers import field

pytestmark = [pytest.mark.soak, pytest.mark.usefixtures("require_spin")]
CYCLES = env_int("CUTESPIN_SOAK_CYCLES", 500)
DOCS = env_int("CUTESPIN_SOAK_DOCS", 10)
RSS_GROWTH_MB = 40  # after warm-up; the result cache and pools are bounded, the rest must not grow

S = SMALL_KERNELS
NAMED = S["small_named"].replace("number_of_threads=64", "number_of_threads=128")


def _swap(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# Each document: (its correct text, its buggy text).
PAIRS = [
    ((SAMPLES / "elected_handoff_fix_syncwarp.py").read_text(), RACE),  # CS201 appears
    (HANDOFF, _swap(HANDOFF, "mbarrier_wait(bar, 0)", "mbarrier_wait(bar, 1)")),  # CS101
    (HANDOFF, _swap(HANDOFF, "mbarrier_init(bar, 1)", "mbarrier_init(bar, 10**9)")),  # CS301 (no search)
    (HANDOFF, _swap(HANDOFF, "mbarrier_arrive(bar)", "mbarrier_arrive(bar")),  # a syntax error mid-edit
    (HANDOFF, _swap(HANDOFF, "cute.arch.sync_warp()", "cute.arch.frobnicate()")),  # unmodeled: inconclusive
    (HANDOFF, _swap(HANDOFF, "    @cute.kernel\n", "")),  # no longer a kernel file
    (NAMED, _swap(NAMED, "barrier_id=1, number_of_threads=128)\n        else",
                  "barrier_id=1, number_of_threads=160)\n        else")),  # CS101 on a named barrier
    (S["small_ring"], _swap(S["small_ring"], "mbarrier_wait(empty + stage, phase ^ 1)",
                            "mbarrier_wait(empty + stage, phase)")),  # CS101 when the ring wraps
    (S["small_flag"], _swap(S["small_flag"], 'scope="gpu")', 'scope="cta")')),  # CS401
    ((SAMPLES / "tma_ring_ok.py").read_text(), (SAMPLES / "tma_ring_wrap_parity.py").read_text()),
]


def diag_key(d: T.Diagnostic) -> tuple:
    return (d.code, d.severity, d.range.start.line, d.range.start.character, d.range.end.line,
            d.range.end.character, d.message)


async def quiesce(client, uris: dict, versions: dict, timeout: float = 180, save_all: bool = True):
    """Save every document (a check of its current text) and wait for all of them to finish."""
    if save_all:
        for uri in uris.values():
            save(client, uri)
    for name, uri in uris.items():
        await wait_until(lambda: final_status(client, uri, versions[name]), timeout,
                         f"the final status of {name} v{versions[name]}")


async def test_soak(tmp_path, robustness_log):
    settings = {"timeout": 30}
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    rng = random.Random(500)
    docs = [(f"doc{i}", PAIRS[i % len(PAIRS)]) for i in range(DOCS)]
    texts, versions, uris = {}, {}, {}
    t0 = time.monotonic()
    async with server(tmp_path, settings=settings, env={"TMPDIR": str(tmpdir)}) as client:
        pid = server_pid(client)
        for name, (good, _) in docs:
            texts[name] = good
            versions[name] = 1
            uris[name] = open_text(client, tmp_path / f"{name}.py", good)
        rss = []
        for cycle in range(CYCLES):
            name, (good, bad) = docs[rng.randrange(len(docs))]
            uri = uris[name]
            versions[name] += 1
            if rng.random() < 0.25 and texts[name]:
                # Typing above the results (incremental): the results must follow the lines.
                line = f"# typed {cycle}\n"
                client.text_document_did_change(T.DidChangeTextDocumentParams(
                    text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=versions[name]),
                    content_changes=[T.TextDocumentContentChangePartial(
                        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
                        text=line)]))
                texts[name] = line + texts[name]
            else:
                texts[name] = bad if rng.random() < 0.5 else good
                change(client, uri, versions[name], texts[name])
            if rng.random() < 0.7:
                save(client, uri)
            await asyncio.sleep(rng.uniform(0.0, 0.03))
            if cycle == min(100, CYCLES // 5):
                # Warm-up over (imports, caches, thread pool): memory from here on must stay flat.
                await quiesce(client, uris, versions)
                warm = rss_kb(pid)
            if cycle % 50 == 0:
                rss.append(rss_kb(pid))
        await quiesce(client, uris, versions)
        await wait_until(lambda: not [p for p in descendants(pid)], 10, "no child process")
        await wait_until(lambda: not cutespin_temp_dirs(str(tmpdir)), 10, "no temp folder")
        end_rss = rss_kb(pid)
        os.kill(pid, 0)
        for uri in uris.values():
            await still_serving(client, uri)
        assert not [m.message for m in client.log_messages if m.type == T.MessageType.Error]
        soaked = {name: sorted(map(diag_key, client.diagnostics.get(uri, ()))) for name, uri in uris.items()}
        if os.environ.get("SOAK_DEBUG"):
            u = uris[os.environ["SOAK_DEBUG"]]
            for st in [s for s in client.statuses if field(s, "uri") == u][-12:]:
                print("STATUS", field(st, "version"), field(st, "state"), field(st, "cached"), field(st, "results"))
            for m in [m.message for m in client.log_messages if os.environ["SOAK_DEBUG"] + ".py" in m.message][-15:]:
                print("LOG", m)
        last_versions = {name: field(final_status(client, uri), "version") for name, uri in uris.items()}
        seconds = time.monotonic() - t0

    assert last_versions == versions  # every document's last word is about its last version
    # A fresh server on the final texts publishes exactly the same diagnostics.
    async with server(tmp_path, settings=settings) as fresh:
        furis = {name: open_text(fresh, tmp_path / f"{name}.py", texts[name]) for name in uris}
        await quiesce(fresh, furis, {name: 1 for name in uris}, save_all=False)
        expected = {name: sorted(map(diag_key, fresh.diagnostics.get(uri, ()))) for name, uri in furis.items()}
    for name in uris:
        assert soaked[name] == expected[name], name
    growth_mb = (end_rss - warm) / 1024
    robustness_log(f"soak: {CYCLES} change/save cycles over {DOCS} documents in {seconds:.0f} s; server RSS "
                   f"{warm // 1024} MB after warm-up, {end_rss // 1024} MB at the end (peak sampled "
                   f"{max(rss + [end_rss]) // 1024} MB); final diagnostics equal a fresh check")
    assert growth_mb < RSS_GROWTH_MB, f"server memory grew by {growth_mb:.0f} MB"
