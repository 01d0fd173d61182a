"""Engine result + line table -> findings with stable codes, messages, spans and interleavings."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from . import ir
from .engine.spin import RunResult
from .model.promela import LineInfo, PromelaModel

KINDS = ("deadlock", "race", "overrun", "scope", "fence", "init", "exit")
CODES = {
    "deadlock": "CS101", "race": "CS201", "overrun": "CS301", "scope": "CS401", "fence": "CS501",
    "init": "CS601", "exit": "CS701",
}
UNMODELED_CODE = "CS901"
INCONCLUSIVE_CODE = "CS902"
SEVERITY = {"deadlock": "error", "race": "error", "overrun": "error", "scope": "error", "fence": "error",
            "init": "error", "exit": "error"}
DOCS_BASE = "https://github.com/cutespin/cutespin/blob/main/docs/codes/"

MAX_STEPS = 40


def docs_url(code: str) -> str:
    return f"{DOCS_BASE}{code}.md"


@dataclass
class Edit:
    path: str
    span: ir.Span
    new_text: str

    def to_json(self) -> dict:
        return {"path": self.path, "range": self.span.to_json(), "new_text": self.new_text}


@dataclass
class Fix:
    title: str
    edits: list  # list[Edit]
    verified: bool = False
    preferred: bool = False

    def to_json(self) -> dict:
        return {"title": self.title, "edits": [e.to_json() for e in self.edits], "verified": self.verified}


@dataclass
class Related:
    path: str
    span: ir.Span
    message: str

    def to_json(self) -> dict:
        return {"path": self.path, "range": self.span.to_json(), "message": self.message}


@dataclass
class TraceStep:
    """One step of the interleaving, for hover tables and the full-trace command."""

    index: int
    process: str
    line: int
    what: str
    state: str = ""
    path: str = ""  # a sibling module's file when the step runs inside one of its helpers


@dataclass
class Finding:
    kind: str
    message: str
    span: ir.Span
    path: str
    related: list = field(default_factory=list)  # list[Related]
    fixes: list = field(default_factory=list)  # list[Fix]
    steps: list = field(default_factory=list)  # list[TraceStep]
    data: dict = field(default_factory=dict)  # what fixes and hover need (barrier, region, ...)
    possible: bool = False  # found in a partial model (unmodeled constructs): may be spurious

    @property
    def code(self) -> str:
        return CODES[self.kind]

    @property
    def severity(self) -> str:
        return "warning" if self.possible else SEVERITY[self.kind]

    def to_json(self) -> dict:
        out = {
            "code": self.code, "kind": self.kind, "severity": self.severity, "message": self.message,
            "path": self.path, "range": self.span.to_json(), "related": [r.to_json() for r in self.related],
            "fixes": [f.to_json() for f in self.fixes],
        }
        if self.span.anchor is not None:  # in a helper of a sibling module: the call that led there
            out["call_site"] = self.span.anchor.to_json()
        return out


def located(path: str, span: ir.Span) -> str:
    """The file a span is in: a sibling module of the package, or the analyzed file."""
    return span.path or path


def _locate(findings: list) -> list:
    """Findings and related locations inside helpers of sibling modules carry those files."""
    for f in findings:
        f.path = located(f.path, f.span)
        for r in f.related:
            r.path = located(r.path, r.span)
    return findings


def _group_steps(res: RunResult, pm: PromelaModel):
    """Trail steps grouped into transitions (one per depth and pid), mapped to source lines."""
    out = []
    last = None
    for s in res.steps:
        # One op may be several transitions on one Promela line (a split d_step): one step.
        key = (s.pid, s.line)
        if key == last:
            continue
        last = key
        info = pm.lines.get(s.line)
        if info is None or info.span is None and info.op != "tma_complete" or info.op == "untracked":
            continue
        out.append((s, info))
    return out


def _barrier_state(values: dict, b: Optional[int]) -> str:
    if b is None:
        return ""
    # The trail prints a variable only when it changes: fields still at 0 are absent.
    if values.get(f"mb_in[{b}]", "0") == "0" and f"mb_p[{b}]" not in values:
        return ""
    p, t, ph = (values.get(f"mb_p[{b}]", "0"), values.get(f"mb_t[{b}]", "0"), values.get(f"mb_ph[{b}]", "0"))
    parts = []
    if p is not None:
        parts.append(f"pending {p}")
    if t is not None:
        parts.append(f"tx {t}")
    if ph is not None:
        parts.append(f"phase {ph}")
    return ", ".join(parts)


def _role_of(pm: PromelaModel, proc: str) -> str:
    return pm.proc_names.get(proc, "TMA unit" if proc == "Tma" else "the launch" if proc == ":init:" else proc)


def build_trace(res: RunResult, pm: PromelaModel, path: str, line_shift=None):
    steps, related = [], []
    grouped = _group_steps(res, pm)
    # A long trail shows its last MAX_STEPS steps under their own numbers, so that one starting
    # at "step 244" says that the steps before it are left out.
    first = max(0, len(grouped) - MAX_STEPS)
    for n, (s, info) in enumerate(grouped[first:], start=first + 1):
        role = _role_of(pm, s.proc)
        state = _barrier_state(res_values(res, s.depth), info.barrier)
        line = info.span.line if info.span else 0
        steps.append(TraceStep(n, role, line, info.what, state, info.span.path if info.span else ""))
        if info.span is not None:
            related.append(Related(path, info.span, f"step {n}: {role} {info.what}" + (f" [{state}]" if state else "")))
    return steps, related


def res_values(res: RunResult, depth: int) -> dict:
    """Barrier variable values after the step at `depth` (from the trail's `-g` deltas)."""
    vals = {}
    for d, name, value in getattr(res, "globals", []):
        if d > depth:
            break
        vals[name] = value
    return vals


ASSERT_KIND = [
    (re.compile(r"mb_in\[\d+\]\)?==0"), "init", "reinit"),
    (re.compile(r"mb_in\[\d+\]\)?>=2"), "init", "unfenced"),
    (re.compile(r"mb_in\["), "init", "uninit"),
    (re.compile(r"dead\["), "exit", "exit"),
    (re.compile(r"mb_p\["), "overrun", "overarrive"),
    (re.compile(r"\btq\d+"), "race", "tma_inflight"),
    (re.compile(r"\bu_\d+"), "fence", "fence"),
    (re.compile(r"\bar_\d+"), "race", "async_read"),
    (re.compile(r"\ba(n|p\d+)?_\d+"), "race", "race"),  # a_r, or the per-partition an_r / ap<j>_r
]


def classify_assertion(text: str):
    compact = text.replace(" ", "").replace("(", "").replace(")", "")
    for rx, kind, sub in ASSERT_KIND:
        if rx.search(compact) or rx.search(text):
            return kind, sub
    return "race", "unknown"


# The operations on a region that carry `exact` (an index that did not fold).
INDEXED_OPS = (ir.Access, ir.TmaLoad, ir.TmaStore, ir.CpAsyncCopy, ir.AsyncRead)


def _inexact_lines(k: ir.KernelModel, region: Optional[int]) -> list:
    """Lines of the accesses and copies of `region` whose element or stage index did not fold
    (ir.Access.exact): the model takes each as the whole buffer, so a race on the region may be
    between elements that differ on the GPU. Counted wherever the model has them, not only where
    the trail runs them: the accesses a trail calls exact can stand for views the model does not
    tell apart either (quack's rotary reads and writes the two halves of `sX` through views
    `composition` / `domain_offset` make, one region for the model), so only a region no inexact
    access touches gives an exact race."""
    if region is None:
        return []
    lines = {op.span.line for p in k.processes for ops in p.variants for op in ir.walk(ops)
             if isinstance(op, INDEXED_OPS) and not op.exact and region in _region_indices(op)}
    return sorted(lines)


def _derived_count_lines(k: ir.KernelModel) -> set:
    """Lines of named barriers whose thread count was derived from users some of which sit
    under a runtime choice (ir.NamedBarrier.count_from_choice)."""
    return {op.span.line for p in k.processes for ops in p.variants for op in ir.walk(ops)
            if isinstance(op, ir.NamedBarrier) and op.count_from_choice}


def _derived_count_barriers(k: ir.KernelModel) -> set:
    """mbarriers whose arrival count was derived from arrivals some warp makes only under a
    choice (ir.MbInit.count_from_choice)."""
    return {op.bar.index for p in k.processes for ops in p.variants for op in ir.walk(ops)
            if isinstance(op, ir.MbInit) and op.count_from_choice}


def _region_indices(op) -> set:
    """The regions an op touches (a TMA load into a whole staged buffer writes every stage)."""
    regions = op.regions() if isinstance(op, ir.TmaLoad) else [op.region] if op.region is not None else []
    return {r.index for r in regions}


def findings_from_run(k: ir.KernelModel, pm: PromelaModel, res: RunResult) -> list:
    findings = _findings_from_run(k, pm, res)
    decided = _compile_time_lines(res, pm, k.path)
    if decided:
        for f in findings:
            f.data["compile_time"] = decided
    return _locate(findings)


def _compile_time_lines(res: RunResult, pm: PromelaModel, path: str) -> list:
    """Where the `const_expr` conditions on values the checker could not compute that the trail
    took a side of are (ir.Choice.compile_time "unknown"), as `line 12` or `helpers.py line 12`: the counterexample holds
    only for builds where they have that value."""
    spans = {(info.span.path or path, info.span.line) for _, info in _group_steps(res, pm)
             if info.op == "ctbranch" and info.span is not None}
    return [f"line {n}" if p == path else f"{os.path.basename(p)} line {n}"
            for p, n in sorted(spans, key=lambda s: (s[0] != path, s[0], s[1]))]


def _findings_from_run(k: ir.KernelModel, pm: PromelaModel, res: RunResult) -> list:
    path = k.path
    steps, related = build_trace(res, pm, path)
    if res.error == "assertion":
        info = pm.lines.get(res.fail_line or -1)
        kind, sub = classify_assertion(res.assertion or "")
        span = info.span if info and info.span else k.def_span
        role = info.process if info else "a role"
        what = info.what if info else "an operation"
        data = {"sub": sub, "op": info.op if info else None, "barrier": info.barrier if info else None,
                "region": info.region if info else None}
        region_name = next((r.name for r in pm.tracked if info and r.index == info.region), "the buffer")
        inexact = _inexact_lines(k, info.region if info else None) if kind == "race" else []
        if inexact:  # a race of any kind through accesses taken as the whole buffer (P16)
            data["inexact"] = inexact
        if kind == "race" and sub == "race" and info and info.op == "load" and info.region in pm.tma_store_dests:
            msg = (f"TMA store result read too early: {role} {what}, but the TMA store that writes it is not "
                   f"completed with cp_async_bulk_wait_group(0) (read=False) and fenced with "
                   f'fence_proxy("async.global") before it is published; the reader can see stale global memory')
            return [Finding("fence", msg, span, path, related, steps=steps, data=data)]
        if kind == "race" and sub == "race":
            narrow = _narrow_for(pm, res, k, info.region if info else None)
            if narrow is not None:
                nspan, nwhy = narrow
                msg = (f"stale read through a too-narrow scope: {role} {what}, but {nwhy}; the reader may see "
                       f"old data on the GPU")
                rel = [Related(path, span, f"the read that may see stale data: {role} {what}")] + related
                data["read_span"] = span.to_json()
                return [Finding("scope", msg, nspan, path, rel, steps=steps, data=data)]
            other = _other_dealloc(res, pm, info) if info and info.op == "dealloc" else None
            if other is not None:
                msg = _double_dealloc_message(role, other.process)
                related = [Related(path, other.span, f"the other dealloc: {other.process} {other.what}")] + related
            elif info and info.op == "dealloc":
                msg = _dealloc_message(role, what)
            elif info and info.op == "load" and info.region in pm.cp_async_dests:
                msg = (f"data race: {role} {what} while a cp.async copy into it is not complete and ordered "
                       f"before the read: cp_async_wait_group(n) must retire the copy's group, threads other than "
                       f"the issuing ones need a barrier (sync_threads / named barrier) after that wait, and the "
                       f"buffer must not be refilled before its readers pass a barrier; on the GPU the read can "
                       f"see stale or partial data")
            elif info and info.op in ("load", "async_read"):
                msg = (f"data race: {role} {what} before the write it depends on is ordered before it "
                       f"(read-after-write); on the GPU it can read stale or partial data")
            elif info and info.op in ("store", "tma_load", "cp_async"):
                msg = (f"data race: {role} {what} while another role may still be reading it "
                       f"(write-after-read); on the GPU the reader can see the new data too early")
            elif info and info.op == "tma_store":
                msg = (f"data race: {role} {what} before every generic write to it is ordered before the "
                       f"store; the TMA can copy stale data")
            else:
                msg = f"data race on {region_name}: {role} {what}"
            return [Finding("race", msg, span, path, related, steps=steps, data=data)]
        if sub == "async_read" and info and info.op == "dealloc":
            return [Finding("race", _dealloc_message(role, what), span, path, related, steps=steps, data=data)]
        if sub == "async_read":
            kinds = pm.async_read_kinds.get(info.region if info else -1, [])
            reasons = []
            if "wgmma" in kinds:
                reasons.append("a warpgroup MMA (wgmma) reading it is not retired: warpgroup.wait_group(N) must "
                               "retire the MMAs that read the buffer before it is released (consumer_release / "
                               "the empty-barrier arrive) or rewritten")
            if "umma" in kinds:
                reasons.append("a tcgen05 MMA reading it may not be done: only a tcgen05.commit (the UMMA "
                               "pipelines' consumer_release / producer_commit) arrives once the MMAs are over, a "
                               "plain arrive right after issuing them does not")
            if "tmem_ld" in kinds:
                reasons.append("a tcgen05.ld reading it is not complete: fence_view_async_tmem_load() must follow "
                               "the loads before the accumulator is released to the MMA")
            msg = (f"data race: {role} {what} while {'; or '.join(reasons) or 'an asynchronous read is in flight'} "
                   f"(write-after-read); on the GPU the asynchronous reader can see the new data")
            return [Finding("race", msg, span, path, related, steps=steps, data=data)]
        if sub == "tma_inflight":
            msg = (f"data race: {role} {what} while an earlier TMA load into the same buffer may still be in "
                   f"flight; the two copies overwrite each other")
            inexact = _inexact_lines(k, info.region if info else None)
            if inexact:
                data["inexact"] = inexact
            return [Finding("race", msg, span, path, related, steps=steps, data=data)]
        if kind == "fence":
            msg = (f"missing proxy fence: {role} {what}, but generic writes to {region_name} are not fenced "
                   f"with fence_view_async_shared() before the handoff; the TMA may read stale shared memory")
            return [Finding("fence", msg, span, path, related, steps=steps, data=data)]
        if kind == "overrun":
            msg = (f"over-arrival: {role} {what} when fewer arrivals are pending in the current phase; the "
                   f"extra arrival completes the phase early or is undefined behaviour on the GPU")
            return [Finding("overrun", msg, span, path, related, steps=steps, data=data)]
        if kind == "exit":
            msg = (f"CTA exit while in use: {role} {what} after the target CTA may have exited; on the GPU the "
                   f"arrive or access hits a CTA whose shared memory is gone (undefined behaviour: on an H200 the "
                   f"launch fails with 'unspecified launch failure')")
            return [Finding("exit", msg, span, path, related, steps=steps, data=data)]
        if kind == "init":
            if sub == "unfenced":
                msg = (f"barrier initialisation not fenced for the cluster: {role} {what} on a peer CTA's "
                       f"barrier before its initialisation was fenced with mbarrier_init_fence(); the peer may "
                       f"arrive on an uninitialised barrier")
            elif sub == "reinit":
                msg = (f"barrier initialised twice: {role} {what} on a live barrier (already arrived on, or "
                       f"initialised with another count); re-initialising a live mbarrier is undefined behaviour")
            else:
                msg = (f"barrier used before initialisation: {role} {what} can run before mbarrier_init is "
                       f"fenced and synchronised (mbarrier_init_fence + sync_threads / cluster barrier)")
            return [Finding("init", msg, span, path, related, steps=steps, data=data)]
    if res.error == "deadlock":
        blocked = []
        for proc, line in res.blocked:
            info = pm.lines.get(line)
            if info is None or info.span is None:
                continue
            blocked.append((proc, info))
        if not blocked:
            return [Finding("deadlock", "deadlock: every remaining role is blocked", k.def_span, path, related,
                            steps=steps, data={"blocked": []})]
        order = {"wait": 0, "flag_wait": 1, "named_wait": 2, "named_arrive": 2, "cluster_wait": 3}
        blocked.sort(key=lambda pi: (order.get(pi[1].op, 9), pi[1].span.line))
        proc, info = blocked[0]
        final = res_values(res, 1 << 30)
        state = _barrier_state(final, info.barrier)
        others = [f"{_role_of(pm, p)} at line {i.span.line}" for p, i in blocked[1:]]
        msg = (f"deadlock: {_role_of(pm, proc)} {info.what} forever" + (f" ({state})" if state else "")
               + (f"; also blocked: {', '.join(others)}" if others else "")
               + ". On the GPU the launch never completes.")
        rel = list(related)
        for p, i in blocked:
            st = _barrier_state(final, i.barrier)
            rel.append(Related(path, i.span, f"blocked: {_role_of(pm, p)} {i.what}" + (f" [{st}]" if st else "")))
        data = {"barrier": info.barrier, "op": info.op,
                "pending": _int(final.get(f"mb_p[{info.barrier}]")) if info.barrier is not None else None,
                "blocked": [{"line": i.span.line, "op": i.op, "barrier": i.barrier} for _, i in blocked]}
        # The count waited for may be more than this run's users make (count_from_choice): the
        # deadlock is possible only, unless a role is stuck on a barrier of a known count that no
        # other blocked role could still arrive on (it is stuck whatever the derived counts are).
        named = {i.span.line for _, i in blocked} & _derived_count_lines(k)
        derived = _derived_count_barriers(k)
        stage = {i.span.line for _, i in blocked if i.op == "wait" and i.barrier in derived}
        if (named | stage) and not _stuck_on_a_known_count(k, blocked, derived):
            data["derived_count"] = sorted(named | stage)
            data["derived_from"] = "named barrier" if not stage else "mbarrier" if not named else "barrier"
        return [Finding("deadlock", msg, info.span, path, rel, steps=steps, data=data)]
    return []


def _stuck_on_a_known_count(k: ir.KernelModel, blocked: list, derived: set) -> bool:
    """Whether a blocked role waits on an mbarrier whose count is known (not derived from a
    choice) and that no other blocked role arrives on (arrives, expects or copies into): the
    roles that could complete its phase have all finished, so it waits forever whatever a
    derived count elsewhere is (cuDNN's Hadamard MoE GEMM: its RHT warps never release a stage,
    and the scheduler blocked on a derived count is a consequence)."""
    feeders: dict = {}  # barrier index -> processes that arrive on it
    for pi, p in enumerate(k.processes):
        for ops in p.variants:
            for op in ir.walk(ops):
                if isinstance(op, (ir.MbArrive, ir.MbExpectTx, ir.TmaLoad)):
                    feeders.setdefault(op.bar.index, set()).add(f"P{pi}")
    waiting = {proc for proc, _ in blocked}
    return any(info.op == "wait" and info.barrier is not None and info.barrier not in derived
               and not (feeders.get(info.barrier, set()) & (waiting - {proc}))
               for proc, info in blocked)


def _other_dealloc(res: RunResult, pm: PromelaModel, info: LineInfo) -> Optional[LineInfo]:
    """The step of the trace that conflicts with a failing dealloc, when it is a dealloc of the
    same TMEM (region, hence CTA) by another role: the latest earlier step of another role on
    that region."""
    for _, step in reversed(_group_steps(res, pm)):
        if step.region == info.region and step.process != info.process and step.span is not None:
            return step if step.op == "dealloc" else None
    return None


def _double_dealloc_message(role: str, other: str) -> str:
    return (f"TMEM freed by more than one warp: {other} and {role} both run dealloc_tmem on the same allocation; "
            f"one warp must deallocate (guard the dealloc with the allocating warp's condition, as the "
            f"alloc_tmem is): on the GPU the same columns are freed more than once, which is undefined behaviour")


def _dealloc_message(role: str, what: str) -> str:
    return (f"data race: {role} {what} (dealloc_tmem / TmemAllocator.free) while another role may still load "
            f"from it (tcgen05.ld) or MMA into it: every TMEM use must be over and ordered before the dealloc by a "
            f"barrier (a named barrier or an mbarrier the deallocating warp waits on); on the GPU the columns can "
            f"be reallocated while in use")


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _narrow_for(pm: PromelaModel, res: RunResult, k: ir.KernelModel, region: Optional[int]):
    """The too-narrow release/acquire that the failing run went through most recently; None when
    it went through none (a 2-CTA kernel's narrow dealloc arrive at its end does not make an
    earlier read of an incomplete TMA load a scope problem: that is a plain race). A remote arrive
    at CTA scope fails to publish its CTA's accesses to the waiters of the peer CTA only, so it
    explains a race on `region` only when the failing access is made in that peer and some warp
    of the arriving CTA accesses the region (cuDNN's frost SDPA kernels free the peer's
    tile-info slot that way while a CTA's MMA reads a buffer its own warps wrote)."""
    grouped = _group_steps(res, pm)
    failing_cta = _process_cta(k, grouped[-1][0].proc) if grouped else None
    accessors = _accessing_ctas(k, region)

    def explains(span, pi) -> bool:
        reach = pm.narrow_reach.get((span, pi))
        return reach is None or reach == failing_cta and k.processes[pi].cta in accessors

    by_site = {(span, f"P{pi}"): (span, why) for span, pi, why in pm.narrow_sites if explains(span, pi)}
    for step, info in reversed(grouped):
        if (info.span, step.proc) in by_site:
            return by_site[(info.span, step.proc)]
    return None


def _accessing_ctas(k: ir.KernelModel, region: Optional[int]) -> set:
    """The CTAs some warp of which accesses `region` (every CTA when the region is not known)."""
    if region is None:
        return {p.cta for p in k.processes}
    return {p.cta for p in k.processes for ops in p.variants for op in ir.walk(ops)
            if region in ir.regions_touched(op)}


def _process_cta(k: ir.KernelModel, proc: str) -> Optional[int]:
    """The CTA of the trail's process `P<i>` (None for another process: the TMA unit)."""
    if proc.startswith("P") and proc[1:].isdigit() and int(proc[1:]) < len(k.processes):
        return k.processes[int(proc[1:])].cta
    return None


def static_findings(k: ir.KernelModel) -> list:
    out = []
    for sf in k.static_findings:
        out.append(Finding(sf.kind, sf.message + " (found without search)", sf.span, k.path,
                           data={"static": True}))
    return _locate(out)


SUPPRESS_RE = re.compile(r"#\s*cutespin\s*:\s*ignore(?:\[([A-Z0-9, ]+)\])?")


def suppressed_codes(source_lines: list, line: int) -> Optional[set]:
    """Codes suppressed on a source line; an empty set means all codes."""
    if not 1 <= line <= len(source_lines):
        return None
    m = SUPPRESS_RE.search(source_lines[line - 1])
    if not m:
        return None
    if m.group(1) is None:
        return set()
    return {c.strip() for c in m.group(1).split(",") if c.strip()}


def is_suppressed(f: Finding, source_lines: list) -> bool:
    codes = suppressed_codes(source_lines, f.span.line)
    return codes is not None and (not codes or f.code in codes)
