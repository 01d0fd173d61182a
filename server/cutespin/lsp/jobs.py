"""One background check per document, its cancellation, and what each document's checks found.

The event loop only schedules and publishes: parsing, lowering, SPIN and fix re-verification run
in a thread pool through `cutespin.api`. A newer job for a document (a save, a debounced edit, a
close) cancels the running one through its `CancelToken`, which also kills the SPIN/compiler/pan
process group. Results stream per kernel; a result is dropped only when a newer job for the same
document has superseded the job that computed it.
"""
from __future__ import annotations

import asyncio
import copy
import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional

from .. import api
from ..config import Settings
from ..fixes import attach_fixes
from .positions import LineHistory

_DONE = object()


# ---------------------------------------------------------------------------------- documents


@dataclass
class KernelEntry:
    """One kernel's latest result and the document version (and text) it was computed on."""

    result: Any  # api.KernelResult
    version: Optional[int]
    lines: list
    path: str
    wall: float = 0.0
    fixes_ready: bool = False


@dataclass
class DocState:
    uri: str
    check_path: str  # the path given to the checker (findings carry it)
    kernels: dict = field(default_factory=dict)  # qualname -> KernelEntry, in source order
    error: Optional[tuple] = None  # (message, line or None, version, lines)
    history: LineHistory = field(default_factory=LineHistory)
    last_text: str = ""
    done_key: Optional[tuple] = None  # (text hash, settings) of the last completed check
    published: bool = False  # diagnostics were published (so closing must clear them)

    def oldest_version(self) -> Optional[int]:
        versions = [e.version for e in self.kernels.values()]
        if self.error is not None:
            versions.append(self.error[2])
        versions = [v for v in versions if v is not None]
        return min(versions) if versions else None

    def prune_history(self) -> None:
        oldest = self.oldest_version()
        if oldest is not None:
            self.history.forget_before(oldest)
        elif not self.kernels and self.error is None:
            self.history.steps.clear()

    def entry_for_finding(self, fid: str):
        """(entry, finding) for an id made by `convert.finding_id`."""
        qualname, _, index = fid.rpartition("#")
        entry = self.kernels.get(qualname)
        if entry is None or not index.isdigit() or int(index) >= len(entry.result.findings):
            return None, None
        return entry, entry.result.findings[int(index)]


def check_key(text: str, settings: Settings) -> tuple:
    # surrogatepass: an editor may send lone surrogates; the front end reports them, this must not fail
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), repr(settings)


# --------------------------------------------------------------------------------------- jobs


@dataclass
class Job:
    uri: str
    version: Optional[int]
    text: str
    path: str
    settings: Settings
    reason: str
    force: bool = False  # skip the per-document cache (re-check, dependency changed)
    token: api.CancelToken = field(default_factory=api.CancelToken)
    task: Optional[asyncio.Task] = None
    started: bool = False
    progress_token: Optional[str] = None

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled


class JobManager:
    """Per-document jobs: `latest` may still be waiting out its debounce delay while `running`
    (an older job) keeps going; starting a job cancels the one running for the same document."""

    def __init__(self, max_workers: int = 4):
        self.executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="cutespin-check")
        self.latest: dict = {}
        self.running: dict = {}

    def submit(self, job: Job, body: Callable[[Job], Awaitable], delay: float = 0.0) -> Job:
        pending = self.latest.get(job.uri)
        if pending is not None and not pending.started:
            self._cancel(pending)
        self.latest[job.uri] = job
        job.task = asyncio.ensure_future(self._run(job, body, delay))
        return job

    async def _run(self, job: Job, body, delay: float):
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            old = self.running.get(job.uri)
            if old is not None and old is not job:
                self._cancel(old)
                if old.task is not None and not old.task.done():
                    # Let it report "cancelled" before this job reports anything: otherwise a result
                    # served at once (unchanged text) can be followed by the old job's "cancelled".
                    await asyncio.wait([old.task], timeout=2.0)
            job.started = True
            self.running[job.uri] = job
            await body(job)
        finally:
            if self.running.get(job.uri) is job:
                del self.running[job.uri]
            if self.latest.get(job.uri) is job:
                del self.latest[job.uri]

    def is_current(self, job: Job) -> bool:
        """Whether the job's results may be published (no newer job has started)."""
        return self.running.get(job.uri) is job and not job.cancelled

    def cancel(self, uri: str) -> list:
        jobs = [j for j in (self.latest.pop(uri, None), self.running.pop(uri, None)) if j is not None]
        for j in jobs:
            self._cancel(j)
        return jobs

    def cancel_all(self) -> None:
        for uri in set(self.latest) | set(self.running):
            self.cancel(uri)

    @staticmethod
    def _cancel(job: Job) -> None:
        job.token.cancel()  # kills the running tool's process group at once
        if job.task is not None and not job.task.done():
            job.task.cancel()

    async def in_thread(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def stream(self, gen):
        """Step a blocking generator in the pool, yielding each item on the loop."""
        while True:
            item = await self.in_thread(next, gen, _DONE)
            if item is _DONE:
                return
            yield item

    def shutdown(self) -> None:
        self.cancel_all()
        self.executor.shutdown(wait=False, cancel_futures=True)


# ------------------------------------------------------------------------------- the check itself


class Sink:
    """What a check reports to (the server implements it; tests may record)."""

    async def started(self, job: Job) -> None: ...
    def kernel_done(self, job: Job, entry: KernelEntry) -> None: ...
    def kernels_done(self, job: Job, qualnames: list, seconds: float) -> None: ...
    def fixes_done(self, job: Job, qualname: str, result, seconds: float) -> None: ...
    def failed(self, job: Job, kind: str, message: str) -> None: ...
    def finished(self, job: Job, seconds: float) -> None: ...
    def cancelled(self, job: Job) -> None: ...


def with_fixes(kr, text: str, settings: Settings, token) -> Any:
    """A copy of a kernel result whose findings carry re-verified fixes (the published result is
    never mutated from a worker thread)."""
    clone = copy.copy(kr)
    clone.findings = []
    for f in kr.findings:
        g = copy.copy(f)
        g.fixes = []
        clone.findings.append(g)
    attach_fixes(clone, text, settings, token)
    return clone


async def run_check(job: Job, jobs: JobManager, sink: Sink) -> None:
    """Check one document version: stream each kernel's result, then re-verify the fixes of the
    kernels with findings (after their diagnostics are out)."""
    t0 = time.monotonic()
    lines = job.text.splitlines()
    try:
        await sink.started(job)
        gen = api.iter_check(job.text, job.path, job.settings, job.token)
        names, with_findings = [], []
        t = time.monotonic()
        async for kr in jobs.stream(gen):
            now = time.monotonic()
            if not jobs.is_current(job):
                return
            entry = KernelEntry(kr, job.version, lines, job.path, wall=now - t)
            entry.fixes_ready = not kr.findings or not job.settings.verify_fixes
            names.append(kr.qualname)
            if kr.findings and job.settings.verify_fixes:
                with_findings.append(entry)
            sink.kernel_done(job, entry)
            t = time.monotonic()
        if not jobs.is_current(job):
            return
        sink.kernels_done(job, names, time.monotonic() - t0)
        for entry in with_findings:
            t = time.monotonic()
            fixed = await jobs.in_thread(with_fixes, entry.result, job.text, job.settings, job.token)
            if not jobs.is_current(job):
                return
            sink.fixes_done(job, entry.result.qualname, fixed, time.monotonic() - t)
        sink.finished(job, time.monotonic() - t0)
    except asyncio.CancelledError:
        sink.cancelled(job)
        raise
    except api.Cancelled:
        sink.cancelled(job)
    except api.FrontendError as e:
        if jobs.is_current(job):
            sink.failed(job, "frontend", str(e))
    except api.ToolError as e:
        if jobs.is_current(job):
            sink.failed(job, "tool", str(e))
    except Exception as e:  # noqa: BLE001 - a crash must not take the server down
        if jobs.is_current(job):
            sink.failed(job, "internal", f"{type(e).__name__}: {e}")
