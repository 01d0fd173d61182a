"""`cutespin serve`: the language server (pygls 2, stdio).

Reads top to bottom: the server class (state, publishing, progress and status glue), the
`SERVER` instance, then one handler per LSP method and command, then `serve()`. Checking runs in
`jobs`, conversion to LSP types in `convert`, options in `settings`.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Optional

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import api
from . import convert
from .deps import depends_on, model_depends_on
from .jobs import DocState, Job, JobManager, KernelEntry, Sink, check_key, run_check
from .positions import RangeEdit, WholeEdit
from .settings import SECTION, ServerOptions, parse_options

log = logging.getLogger("cutespin.lsp")

STATUS = "cutespin/status"
CONFIG_TIMEOUT = 5.0  # seconds to wait for the client's workspace/configuration answer
REPUBLISH_DELAY = 0.3  # after edits in onSave mode: move the shown results with the text


class CutespinServer(LanguageServer, Sink):
    """The server's state: open documents' results, per-document jobs and the options."""

    def __init__(self):
        super().__init__("cutespin", api.__version__, text_document_sync_kind=T.TextDocumentSyncKind.Incremental)
        self.options = ServerOptions()
        self.init_options = None
        self.docs: dict = {}  # uri -> DocState
        self.jobs = JobManager()
        self.config_task: Optional[asyncio.Task] = None
        self.republish_handles: dict = {}
        self.shown: set = set()  # messages already shown as popups (never repeat them)
        self.watcher = None  # DiskWatcher, for clients that cannot watch files for us

    # ---------------------------------------------------------------------------- files on disk

    def workspace_roots(self) -> list:
        roots = [Path(p) for p in self.options.extra_paths]
        roots += [Path(to_fs_path(f.uri)) for f in self.workspace.folders.values() if to_fs_path(f.uri)]
        if self.workspace.root_path:
            roots.append(Path(self.workspace.root_path))
        return roots

    def on_disk_change(self, changed: Path) -> None:
        """A file changed outside the editor: re-check the open documents that depend on it."""
        roots = self.workspace_roots()
        for uri in list(self.docs):
            doc = self.workspace.text_documents.get(uri)
            if doc is None or not uri.startswith("file:") or Path(doc.path).resolve() == changed.resolve():
                continue
            if changed.name == "pyproject.toml" or depends_on(doc.source, Path(doc.path), changed, roots) \
                    or model_depends_on(self.docs[uri], changed):
                self.log_message(f"cutespin: {changed.name} changed on disk: re-checking {Path(doc.path).name}")
                self.schedule(uri, "dependency", force=True)

    def start_disk_watcher(self) -> None:
        """For clients that cannot watch files: our own watchdog observer."""
        from .watch import DiskWatcher

        try:
            self.watcher = DiskWatcher(asyncio.get_running_loop(), self.on_disk_change)
        except Exception as e:  # noqa: BLE001 - no watcher: changes on disk wait for the next save
            log.info("no file watcher: %s", e)
            return
        for root in self.workspace_roots():
            self.watcher.watch(root)
        for uri in list(self.docs):  # documents opened before initialization finished
            path = to_fs_path(uri)
            if path:
                self.watcher.watch(Path(path).parent)

    # ---------------------------------------------------------------------------- documents

    def state(self, uri: str) -> DocState:
        st = self.docs.get(uri)
        if st is None:
            doc = self.workspace.get_text_document(uri)
            st = self.docs[uri] = DocState(uri, doc.path or uri, last_text=doc.source)
        return st

    def current_version(self, uri: str) -> Optional[int]:
        doc = self.workspace.text_documents.get(uri)
        return doc.version if doc is not None else None

    def placement(self, st: DocState, version: Optional[int], lines: list, path: str) -> convert.Placement:
        doc = self.workspace.text_documents.get(st.uri)
        units = doc.position_codec.client_num_units if doc is not None else len
        return convert.Placement(st.uri, path, lines, lambda line: st.history.map_line(line, version), units)

    def entry_placement(self, st: DocState, entry: KernelEntry) -> convert.Placement:
        return self.placement(st, entry.version, entry.lines, entry.path)

    def diagnostics(self, st: DocState) -> list:
        out = []
        if st.error is not None:
            message, line, version, lines = st.error
            out.append(convert.error_diagnostic(message, line, self.placement(st, version, lines, st.check_path)))
        for entry in st.kernels.values():
            out += convert.kernel_diagnostics(entry.result, self.entry_placement(st, entry), version=entry.version,
                                              fixes_ready=entry.fixes_ready, overrides=self.options.severity_for)
        return out

    def publish(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
            uri=uri, diagnostics=self.diagnostics(st), version=self.current_version(uri)))
        st.published = True

    def clear(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is not None and st.published:
            self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            st.published = False

    # ------------------------------------------------------------------------- messages

    def log_message(self, message: str, level: T.MessageType = T.MessageType.Log) -> None:
        log.info("%s", message)
        self.window_log_message(T.LogMessageParams(type=level, message=message))

    def show_once(self, message: str, level: T.MessageType = T.MessageType.Error) -> None:
        """A popup for what the user must act on (a missing tool, bad settings), once per text."""
        self.log_message(message, level)
        if message not in self.shown:
            self.shown.add(message)
            self.window_show_message(T.ShowMessageParams(type=level, message=message))

    def report_server_error(self, error, source):
        """Unexpected errors go to the log, never to popups (no storms)."""
        log.exception("server error (%s): %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(T.LogMessageParams(type=T.MessageType.Error, message=f"cutespin: {error}"))
        except Exception:  # noqa: BLE001
            pass

    def status(self, job_or_uri, state: str, **extra) -> None:
        uri = job_or_uri if isinstance(job_or_uri, str) else job_or_uri.uri
        st = self.docs.get(uri)
        kernels = list(st.kernels.values()) if st is not None else []
        payload = {
            "uri": uri, "state": state,
            "version": extra.pop("version", None if isinstance(job_or_uri, str) else job_or_uri.version),
            "kernels": len(kernels), "findings": sum(len(e.result.findings) for e in kernels),
            "inconclusive": sum(1 for e in kernels if e.result.verdict == "inconclusive"),
            "results": [{"kernel": e.result.qualname, "verdict": e.result.verdict, "version": e.version,
                         "findings": [f.code for f in e.result.findings]} for e in kernels],
        }
        payload.update(extra)
        self.protocol.notify(STATUS, payload)

    # ------------------------------------------------------------------------- progress

    def supports_progress(self) -> bool:
        w = self.client_capabilities.window
        return bool(w and w.work_done_progress)

    async def progress_begin(self, job: Job, title: str) -> None:
        if not self.supports_progress():
            return
        token = str(uuid.uuid4())
        try:
            # Shielded: a check cancelled while the client has not answered yet must not cancel the
            # request's future, which pygls still completes with the answer (InvalidStateError).
            await asyncio.shield(self.work_done_progress.create_async(token))
        except Exception as e:  # noqa: BLE001 - the client refused: no progress, still check
            log.warning("work done progress refused: %s", e)
            return
        job.progress_token = token
        self.work_done_progress.begin(token, T.WorkDoneProgressBegin(title=title, cancellable=True,
                                                                      message=Path(job.path).name))
        fut = self.work_done_progress.tokens.get(token)
        if fut is not None:
            loop = asyncio.get_running_loop()
            fut.add_done_callback(lambda f: loop.call_soon_threadsafe(self._progress_cancelled, job)
                                  if f.cancelled() else None)

    def _progress_cancelled(self, job: Job) -> None:
        if not job.task.done():
            self.log_message(f"cutespin: check of {Path(job.path).name} cancelled from the editor")
            self.jobs.cancel(job.uri)

    def progress_report(self, job: Job, message: str) -> None:
        if job.progress_token:
            self.work_done_progress.report(job.progress_token, T.WorkDoneProgressReport(message=message))

    def progress_end(self, job: Job, message: str) -> None:
        if job.progress_token:
            token, job.progress_token = job.progress_token, None
            self.work_done_progress.end(token, T.WorkDoneProgressEnd(message=message))
            self.work_done_progress.tokens.pop(token, None)

    # ----------------------------------------------------------------------- scheduling

    def schedule(self, uri: str, reason: str, delay: float = 0.0, force: bool = False) -> Optional[Job]:
        """Start (or debounce) the check of a document's current text; cancels the running one."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        st = self.state(uri)
        text = doc.source
        if not convert.has_kernels(text):
            # Not a CuTe kernel file: nothing to check, and nothing of ours may stay on it.
            self.jobs.cancel(uri)
            st.kernels.clear()
            st.error = None
            self.clear(uri)
            self.status(uri, "idle", version=doc.version, message="no CuTe kernels in this file")
            return None
        job = Job(uri, doc.version, text, st.check_path, settings=None, reason=reason, force=force)
        return self.jobs.submit(job, self._check, delay)

    async def _check(self, job: Job) -> None:
        await self.config_ready()
        path = Path(job.path) if job.uri.startswith("file:") else None
        root = Path(self.workspace.root_path) if self.workspace.root_path else None
        try:
            job.settings = self.options.core_settings(path, root)
        except (TypeError, ValueError) as e:  # e.g. a [tool.cutespin] value of the wrong type
            self.failed(job, "settings", f"cannot use the settings for {Path(job.path).name}: {e}")
            return
        st = self.state(job.uri)
        if not job.force and st.done_key == check_key(job.text, job.settings):
            self.publish(job.uri)
            self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: unchanged since the last check; "
                             f"{len(st.kernels)} kernel result(s) served from cache")
            self.status(job, "done", cached=True, seconds=0.0)
            return
        await run_check(job, self.jobs, self)

    async def config_ready(self) -> None:
        task = self.config_task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CONFIG_TIMEOUT)
            except Exception:  # noqa: BLE001
                pass

    def recheck_all(self, reason: str, force: bool = True) -> None:
        for uri in list(self.workspace.text_documents):
            if uri in self.docs:
                self.schedule(uri, reason, force=force)

    # ------------------------------------------------------------------ Sink (from run_check)

    async def started(self, job: Job) -> None:
        self.status(job, "checking", reason=job.reason)
        await self.progress_begin(job, "cutespin")

    def kernel_done(self, job: Job, entry: KernelEntry) -> None:
        st = self.state(job.uri)
        st.error = None
        st.done_key = None
        st.kernels[entry.result.qualname] = entry
        self.publish(job.uri)
        kr = entry.result
        s = kr.stats
        self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: {kr.qualname}: {kr.verdict} in "
                         f"{entry.wall:.2f} s (SPIN {s.get('seconds', 0.0):.2f} s, {s.get('states', 0)} states)"
                         + convert.timings_text(kr.timings))
        self.progress_report(job, f"{kr.qualname}: {kr.verdict}")

    def kernels_done(self, job: Job, qualnames: list, seconds: float) -> None:
        st = self.state(job.uri)
        st.kernels = {q: st.kernels[q] for q in qualnames if q in st.kernels}
        st.error = None
        st.prune_history()
        self.publish(job.uri)
        self.refresh_lenses()
        pending = sum(1 for e in st.kernels.values() if not e.fixes_ready)
        self.status(job, "checked", seconds=round(seconds, 3), fixesPending=pending)
        if pending:
            self.progress_report(job, "verifying fixes")

    def fixes_done(self, job: Job, qualname: str, result, seconds: float) -> None:
        st = self.state(job.uri)
        entry = st.kernels.get(qualname)
        if entry is None or entry.version != job.version:
            return
        entry.result = result
        entry.fixes_ready = True
        self.publish(job.uri)
        n = sum(len(f.fixes) for f in result.findings)
        ok = sum(1 for f in result.findings for x in f.fixes if x.verified)
        self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: {qualname}: {ok} of {n} proposed "
                         f"fix(es) verified in {seconds:.2f} s")

    def failed(self, job: Job, kind: str, message: str) -> None:
        st = self.state(job.uri)
        if kind == "frontend":
            line = convert.error_line(message)
            st.kernels.clear()
            st.error = (message, line, job.version, job.text.splitlines())
            st.done_key = None
            self.publish(job.uri)
            self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: {message}", T.MessageType.Warning)
        elif kind in ("tool", "settings"):
            self.show_once(f"cutespin: {message}")
        else:
            self.show_once(f"cutespin: internal error (a cutespin bug; please report it): {message}")
        self.progress_end(job, "failed")
        self.status(job, "error", message=message, kind=kind)

    def finished(self, job: Job, seconds: float) -> None:
        st = self.state(job.uri)
        st.done_key = check_key(job.text, job.settings)
        self.refresh_lenses()
        n = len(st.kernels)
        findings = sum(len(e.result.findings) for e in st.kernels.values())
        msg = f"{n} kernel{'s' if n != 1 else ''}, {findings} finding{'s' if findings != 1 else ''} in {seconds:.2f} s"
        self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: checked: {msg}")
        self.progress_end(job, msg)
        self.status(job, "done", seconds=round(seconds, 3), cached=False)

    def cancelled(self, job: Job) -> None:
        self.log_message(f"cutespin: {Path(job.path).name} v{job.version}: check cancelled ({job.reason})")
        self.progress_end(job, "cancelled")
        self.status(job, "cancelled")

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses and inlay hints (where it supports that)."""
        ws = self.client_capabilities.workspace
        if ws and ws.code_lens and ws.code_lens.refresh_support:
            asyncio.ensure_future(self._refresh(self.workspace_code_lens_refresh_async))
        if ws and ws.inlay_hint and ws.inlay_hint.refresh_support:
            asyncio.ensure_future(self._refresh(self.workspace_inlay_hint_refresh_async))

    async def _refresh(self, request) -> None:
        try:
            await request(None)
        except Exception as e:  # noqa: BLE001 - a client that does not refresh is fine
            log.debug("refresh: %s", e)

    # ---------------------------------------------------------------------------- options

    def apply_options(self, raw) -> tuple:
        """Parse and adopt options; returns (core settings changed, anything changed)."""
        opts, problems = parse_options(raw)
        for p in problems:
            self.show_once(p, T.MessageType.Warning)
        old, self.options = self.options, opts
        core = [f for f in ("spin", "compiler", "loop_bound", "depth", "timeout", "memory_mb", "strict",
                            "verify_fixes", "extra_paths") if getattr(old, f) != getattr(opts, f)]
        if old != opts:
            self.log_message(f"cutespin: options: {opts}")
        return bool(core), old != opts

    async def pull_options(self, pushed=None) -> tuple:
        raw = None
        ws = self.client_capabilities.workspace
        if ws and ws.configuration:
            try:
                res = await asyncio.wait_for(self.workspace_configuration_async(
                    T.ConfigurationParams(items=[T.ConfigurationItem(section=SECTION)])), CONFIG_TIMEOUT)
                raw = res[0] if res else None
            except Exception as e:  # noqa: BLE001
                log.warning("workspace/configuration failed: %s", e)
        if raw is None and pushed is not None:
            raw = pushed
        if raw is None:
            raw = self.init_options
        return self.apply_options(raw)


SERVER = CutespinServer()


# ----------------------------------------------------------------------------------- lifecycle


@SERVER.feature(T.INITIALIZE)
def initialize(ls: CutespinServer, params: T.InitializeParams) -> None:
    """Keep the initializationOptions: the settings of clients without workspace/configuration."""
    ls.init_options = params.initialization_options
    ls.apply_options(ls.init_options)


@SERVER.feature(T.INITIALIZED)
async def initialized(ls: CutespinServer, params: T.InitializedParams) -> None:
    """Pull the settings, then ask for configuration-change and file-watch notifications."""
    ls.config_task = asyncio.ensure_future(ls.pull_options())
    await ls.config_task
    ws = ls.client_capabilities.workspace
    registrations = []
    if ws and ws.did_change_configuration and ws.did_change_configuration.dynamic_registration:
        registrations.append(T.Registration(id=str(uuid.uuid4()), method=T.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                            register_options=T.DidChangeConfigurationRegistrationOptions(
                                                section=SECTION)))
    if ws and ws.did_change_watched_files and ws.did_change_watched_files.dynamic_registration:
        registrations.append(T.Registration(
            id=str(uuid.uuid4()), method=T.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=T.DidChangeWatchedFilesRegistrationOptions(watchers=[
                T.FileSystemWatcher(glob_pattern="**/*.py"), T.FileSystemWatcher(glob_pattern="**/pyproject.toml")])))
    if registrations:
        try:
            await ls.client_register_capability_async(T.RegistrationParams(registrations=registrations))
        except Exception as e:  # noqa: BLE001
            log.info("dynamic registration refused: %s", e)
    if not (ws and ws.did_change_watched_files and ws.did_change_watched_files.dynamic_registration):
        ls.start_disk_watcher()


@SERVER.feature(T.SHUTDOWN)
def shutdown(ls: CutespinServer, params) -> None:
    """Stop every check (killing SPIN) and clear everything we published."""
    if ls.watcher is not None:
        ls.watcher.stop()
    ls.jobs.cancel_all()
    for uri in list(ls.docs):
        ls.clear(uri)
    ls.jobs.shutdown()


# ----------------------------------------------------------------------------------- documents


@SERVER.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CutespinServer, params: T.DidOpenTextDocumentParams) -> None:
    """Check a document when it opens."""
    ls.state(params.text_document.uri)
    if ls.watcher is not None:
        path = to_fs_path(params.text_document.uri)
        if path:
            ls.watcher.watch(Path(path).parent)
    ls.schedule(params.text_document.uri, "open")


@SERVER.feature(T.TEXT_DOCUMENT_DID_SAVE, T.SaveOptions(include_text=False))
def did_save(ls: CutespinServer, params: T.DidSaveTextDocumentParams) -> None:
    """Check on save (a newer save cancels the running check); the open kernels whose models
    include code of the saved module are re-checked too."""
    ls.schedule(params.text_document.uri, "save")
    path = to_fs_path(params.text_document.uri)
    if path:
        ls.on_disk_change(Path(path))


@SERVER.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CutespinServer, params: T.DidChangeTextDocumentParams) -> None:
    """Track line moves for the shown results; in onType mode, check after a pause in typing."""
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    doc = ls.workspace.text_documents.get(uri)
    if st is None or doc is None:
        return
    changes = params.content_changes
    if all(isinstance(ch, T.TextDocumentContentChangePartial) for ch in changes):
        edits = [RangeEdit(ch.range.start.line, ch.range.start.character, ch.range.end.line, ch.range.end.character,
                           ch.text) for ch in changes]
    else:
        edits = [WholeEdit(st.last_text, doc.source)]
    st.last_text = doc.source
    if st.kernels or st.error is not None or uri in ls.jobs.latest or uri in ls.jobs.running:
        st.history.record(doc.version, edits)  # results still to come must land on the right lines
    if ls.options.trigger == "onType":
        ls.schedule(uri, "change", delay=ls.options.debounce_ms / 1000)
    elif st.published and edits:
        handle = ls.republish_handles.pop(uri, None)
        if handle is not None:
            handle.cancel()
        ls.republish_handles[uri] = asyncio.get_running_loop().call_later(REPUBLISH_DELAY, ls.publish, uri)


@SERVER.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CutespinServer, params: T.DidCloseTextDocumentParams) -> None:
    """Cancel the document's check and clear its diagnostics."""
    uri = params.text_document.uri
    ls.jobs.cancel(uri)
    handle = ls.republish_handles.pop(uri, None)
    if handle is not None:
        handle.cancel()
    ls.clear(uri)
    ls.docs.pop(uri, None)
    ls.status(uri, "closed")


@SERVER.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: CutespinServer, params: T.DidChangeConfigurationParams) -> None:
    """Re-read the settings; re-check open documents when the checker's settings changed."""
    ls.config_task = asyncio.ensure_future(ls.pull_options(params.settings))
    core, changed = await ls.config_task
    if core:
        ls.recheck_all("settings", force=False)
    elif changed:
        for uri in list(ls.docs):
            if ls.docs[uri].published:
                ls.publish(uri)


@SERVER.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: CutespinServer, params: T.DidChangeWatchedFilesParams) -> None:
    """A pyproject.toml or an imported module changed on disk: re-check who depends on it."""
    for change in params.changes:
        path = to_fs_path(change.uri)
        if path is not None:
            ls.on_disk_change(Path(path))


# ------------------------------------------------------------------------------------- features


@SERVER.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: CutespinServer, params: T.HoverParams) -> Optional[T.Hover]:
    """The interleaving through this line, or the kernel's verdict on its def/barrier lines."""
    st = ls.docs.get(params.text_document.uri)
    if st is None:
        return None
    line = params.position.line + 1
    sections = []
    for entry in st.kernels.values():
        kr = entry.result
        place = ls.entry_placement(st, entry)
        for i, f in enumerate(kr.findings):
            hits = [s.line for s in f.steps if s.line and not s.path and place.current_line(s.line) == line]
            shown = convert.doc_line(f, place, kr.line)
            if place.current_line(shown) == line:
                hits.append(shown)
            if hits:
                sections.append(convert.finding_hover(f, convert.finding_id(kr.qualname, i), place, hits[0]))
        on_sync = kr.verdict != "counterexample" and any(place.current_line(n) == line for n in api.sync_lines(kr))
        if place.current_line(kr.line) == line or on_sync:
            sections.append(convert.kernel_hover(kr))
    if not sections:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value="\n\n---\n\n".join(sections)))


def _kind_wanted(kind: str, only) -> bool:
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


@SERVER.feature(T.TEXT_DOCUMENT_CODE_ACTION,
                T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, convert.FIX_ALL_KIND]))
def code_action(ls: CutespinServer, params: T.CodeActionParams) -> Optional[list]:
    """Verified fixes as quick fixes, and `source.fixAll.cutespin`."""
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return None
    version = ls.current_version(uri)
    only = params.context.only
    actions = []
    if _kind_wanted(T.CodeActionKind.QuickFix.value, only):
        seen = set()
        for d in params.context.diagnostics:
            data = d.data if isinstance(d.data, dict) else None
            if d.source != convert.SOURCE or not data or "id" not in data:
                continue
            entry, f = st.entry_for_finding(data["id"])
            if f is None or entry.version != data.get("version") or not entry.fixes_ready:
                continue
            seen.add(data["id"])
            actions += convert.quick_fixes(f, ls.entry_placement(st, entry), version, d)
        if not params.context.diagnostics:
            for entry in st.kernels.values():
                place = ls.entry_placement(st, entry)
                for f in entry.result.findings:
                    shown = convert.doc_line(f, place, entry.result.line)
                    if entry.fixes_ready and params.range.start.line <= place.current_line(shown) - 1 \
                            <= params.range.end.line:
                        actions += convert.quick_fixes(f, place, version, None)
    if _kind_wanted(convert.FIX_ALL_KIND, only):
        pairs = [(f, ls.entry_placement(st, e)) for e in st.kernels.values() if e.fixes_ready
                 for f in e.result.findings]
        action = convert.fix_all(pairs, version)
        if action is not None:
            actions.append(action)
    return actions or None


@SERVER.feature(T.TEXT_DOCUMENT_CODE_LENS, T.CodeLensOptions(resolve_provider=False))
def code_lens(ls: CutespinServer, params: T.CodeLensParams) -> Optional[list]:
    """Above each kernel: verdict, states, time (click: trace or model) and "re-check"."""
    st = ls.docs.get(params.text_document.uri)
    if st is None:
        return None
    out = []
    for entry in st.kernels.values():
        out += convert.kernel_lenses(entry.result, ls.entry_placement(st, entry), not entry.fixes_ready)
    return out


@SERVER.feature(T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=False))
def inlay_hint(ls: CutespinServer, params: T.InlayHintParams) -> Optional[list]:
    """After each barrier init or pipeline create: derived arrivals per phase vs the expected count."""
    st = ls.docs.get(params.text_document.uri)
    if st is None:
        return None
    out = []
    for entry in st.kernels.values():
        hints = convert.inlay_hints(api.barrier_inits(entry.result), ls.entry_placement(st, entry))
        out += [h for h in hints if params.range.start.line <= h.position.line <= params.range.end.line]
    return out


# ------------------------------------------------------------------------------------- commands


@SERVER.command(convert.CMD_SHOW_PROMELA)
async def show_promela(ls: CutespinServer, uri: str, *rest) -> Optional[dict]:
    """The generated Promela model of a kernel (arguments: uri[, qualname]) and its map back to
    source lines."""
    qualname = rest[0] if rest and isinstance(rest[0], str) else None
    st = ls.docs.get(uri)
    if st is None or not st.kernels:
        return None
    entry = st.kernels.get(qualname) if qualname else next(iter(st.kernels.values()))
    if entry is None:
        return None
    pm = entry.result.promela
    if pm is None:
        doc = ls.workspace.get_text_document(uri)
        settings = ls.options.core_settings(Path(doc.path) if uri.startswith("file:") else None)
        pm = await ls.jobs.in_thread(api.promela_for, "\n".join(entry.lines) + "\n", entry.path, settings,
                                     entry.result.qualname)
        if pm is None:
            return None
    place = ls.entry_placement(st, entry)
    return {"uri": f"cutespin-promela:{entry.result.qualname}.pml", "qualname": entry.result.qualname,
            "language": "promela", "text": pm.text, "lineMap": convert.promela_line_map(pm, place)}


@SERVER.command(convert.CMD_SHOW_TRACE)
def show_trace(ls: CutespinServer, uri: str, finding: str) -> Optional[dict]:
    """Every step of a counterexample's interleaving (as data and as a Markdown table)."""
    st = ls.docs.get(uri)
    if st is None:
        return None
    entry, f = st.entry_for_finding(finding)
    if f is None:
        return None
    place = ls.entry_placement(st, entry)
    return {"id": finding, "code": f.code, "message": f.message, "steps": convert.trace_json(f, place),
            "markdown": f"**cutespin {f.code}**: {f.message}\n\n" + convert.trace_table(f.steps, place)}


@SERVER.command(convert.CMD_RECHECK)
async def recheck(ls: CutespinServer, uri: str, *rest) -> Optional[dict]:
    """Re-check a document now (arguments: uri[, qualname]; the whole document is re-checked, and
    SPIN's results are still reused for unchanged models). Returns the verdicts once done."""
    job = ls.schedule(uri, "recheck", force=True)
    if job is None:
        return None
    try:
        await asyncio.shield(job.task)
    except asyncio.CancelledError:
        return {"version": job.version, "cancelled": True}
    st = ls.docs.get(uri)
    return {"version": job.version, "cancelled": job.cancelled,
            "results": [{"kernel": q, "verdict": e.result.verdict} for q, e in st.kernels.items()] if st else []}


# ---------------------------------------------------------------------------------------- start


def _setup_logging(log_file: Optional[str], verbose: bool) -> None:
    handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else (logging.INFO if log_file else logging.WARNING))
    if not verbose:
        logging.getLogger("pygls").setLevel(logging.WARNING)


def serve(log_file: Optional[str] = None, verbose: bool = False) -> int:
    """Run the server over stdio until the client says exit. Returns the exit code: 0 after a
    shutdown request, 1 when the client went away without one."""
    _setup_logging(log_file, verbose)
    started = time.monotonic()
    log.info("cutespin %s language server starting (stdio)", api.__version__)
    try:
        SERVER.start_io()
    finally:
        SERVER.jobs.shutdown()
        log.info("cutespin language server stopped after %.1f s", time.monotonic() - started)
    return 0 if getattr(SERVER.protocol, "_shutdown", False) else 1
