"""The one entry point the CLI, the language server, the fixes and the benchmarks call.

`iter_check` lowers a document into per-kernel models, runs each through SPIN and yields each
kernel's result as soon as it is known; fixes are proposed and re-verified afterwards, so they
never delay the first result.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional

from . import ir
from .config import Settings
from .engine.spin import (Cancelled, CancelToken, InternalError, RunResult, ToolError, Tools, check_model,
                          find_tools)
from .findings import Finding, findings_from_run, is_suppressed, static_findings
from .frontend import FrontendError, build_models
from .model.promela import (ModelTooLarge, OverStatementCap, PromelaModel, TooManyGroups, ValueOutOfRange,
                             configuration_groups, lower, tracked_region_weights)
from .model import symmetry

__version__ = "0.1.0"


@dataclass
class KernelResult:
    path: str
    name: str
    qualname: str
    line: int
    verdict: str  # "counterexample" | "verified" | "inconclusive"
    reason: Optional[str]  # why inconclusive
    bounds: dict
    assumptions: list
    findings: list  # list[Finding]
    unmodeled: list  # list[ir.Unmodeled]
    stats: dict
    # The whole model (every warp); the search may have run on it with identical warps left out
    # (`bounds["identical_warps"]`), which `promela` and `run` then describe.
    model: Optional[ir.KernelModel] = None
    promela: Optional[PromelaModel] = None
    run: Optional[RunResult] = None
    suppressed: list = field(default_factory=list)
    # Seconds per stage, for the benchmarks and the server log (not part of the JSON report):
    # "frontend" (the whole file's front end, shared by its kernels), "lower", and the engine's
    # "spin_a", "compile", "pan", "trail" when SPIN ran now; "cached" = 1.0 when its result came
    # from the cache instead.
    timings: dict = field(default_factory=dict)
    # Which bound cut the check short, when one did: "time", "memory" (the search) or "size" (the
    # unrolled model is over the Promela size limit). Smaller loop bounds may help (not in JSON).
    cut_short: Optional[str] = None

    def to_json(self) -> dict:
        return {
            "name": self.name, "qualname": self.qualname, "line": self.line, "verdict": self.verdict,
            "reason": self.reason, "bounds": self.bounds, "assumptions": list(self.assumptions),
            "findings": [f.to_json() for f in self.findings],
            "unmodeled": [{"path": u.path or self.path, "line": u.line, "construct": u.construct, "why": u.why}
                          for u in self.unmodeled],
            "depends_on": list(self.model.deps) if self.model is not None else [],
            "stats": self.stats,
        }


@dataclass
class FileResult:
    path: str
    kernels: list  # list[KernelResult]
    error: Optional[str] = None

    def to_json(self) -> dict:
        return {"path": self.path, "kernels": [k.to_json() for k in self.kernels]}


class _ResultCache:
    """Engine results keyed by the position-free Promela text, the bounds and the tool versions."""

    def __init__(self, size=256):
        self.size = size
        self.data: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            v = self.data.get(key)
            if v is not None:
                self.data.move_to_end(key)
            return v

    def put(self, key, value):
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)


CACHE = _ResultCache()


def model_key(text: str, settings: Settings, tools: Tools) -> str:
    h = hashlib.sha256()
    for part in (text, str(settings.depth), str(settings.memory_mb), str(settings.timeout), tools.spin_version,
                 tools.compiler_name, __version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def run_kernel(k: ir.KernelModel, settings: Settings, tools: Tools, token: Optional[CancelToken] = None,
               source_lines: Optional[list] = None) -> KernelResult:
    findings = static_findings(k)
    # The search runs on the model with identical warps cut to two (a bound the verdict states);
    # the result keeps the whole model, from which fixes compute counts in the source's terms.
    whole = k
    k = symmetry.reduce_identical_warps(k)
    pm: Optional[PromelaModel] = None
    run: Optional[RunResult] = None
    reason = None
    assumptions = list(k.assumptions)
    timings = {}
    t0 = time.monotonic()
    cut_short = None
    parts = None  # configuration groups checked one at a time, when the whole model is too large
    notes: list = []  # what the lowering could not express: no verdict is `verified` with one
    sliced: dict = {}  # checked a group of regions at a time: "all" regions, the "models"' groups
    try:
        pm = lower(k, statement_cap=SLICE_STATEMENTS)
        if len(pm.text) > SPLIT_MODEL_CHARS and len(pm.config_groups) > 1:
            parts = pm.config_groups
    except OverStatementCap:
        parts = _groups_to_split(k) or [None]  # None: the whole kernel, a group of regions at a time
    except ModelTooLarge as e:
        parts = _groups_to_split(k)
        if parts is None:
            reason, cut_short = f"model too large: {e}", "size"
    except TooManyGroups as e:
        reason = f"model too large: {e}"
    except ValueOutOfRange as e:
        reason = f"a value the model cannot hold: {e}"
    timings["lower"] = time.monotonic() - t0
    if pm is not None and not findings and not k.processes:
        if not k.unmodeled:
            assumptions.append("the kernel has no synchronization operations")
    elif (pm is not None or parts) and not findings:
        states = transitions = 0
        seconds = 0.0
        for searched, part_pm, run, too_large in _search(k, pm, parts, settings, tools, token, timings, sliced):
            if too_large is not None:
                reason, cut_short = too_large, "size"
                break
            notes += [n for n in part_pm.notes if n not in notes]  # every part's, not only the one kept
            states, transitions, seconds = states + run.states, transitions + run.transitions, seconds + run.seconds
            if run.status == "error":
                pm = part_pm
                findings = findings_from_run(searched, pm, run)
                if not findings:  # an error the trail does not explain is no proof either
                    reason = f"the search stopped on an error it could not explain ({run.error}); nothing is proven"
                break
            if run.status == "incomplete":
                pm = part_pm
                reason = f"the search hit the {run.incomplete} bound after {states} states; nothing is proven"
                cut_short = run.incomplete
                break
            pm = pm or part_pm  # the whole model when it was built: what `show Promela` shows
        if run is not None:
            run = replace(run, states=states, transitions=transitions, seconds=seconds)
        if parts and parts != [None]:
            assumptions.append(f"the {sum(map(len, parts))} configurations were checked as {len(parts)} models, "
                               f"one per group of configurations that lower alike: together they were too large "
                               f"for one model")
        if sliced.get("models"):
            n = len(sliced["models"])
            assumptions.append(f"races were checked a group of buffers at a time ({n} model{'s' if n != 1 else ''} "
                               f"searched, each over the same interleavings and tracking some of the "
                               f"{len(sliced['all'])} buffers): tracking them all in one model was too large")
    suppressed = []
    if source_lines is not None:
        kept = []
        for f in findings:
            lines = source_lines if f.path == k.path else _file_lines(f.path)
            (suppressed if is_suppressed(f, lines) else kept).append(f)
        findings = kept
    notes += [n for n in (pm.notes if pm is not None else []) if n not in notes]
    if notes:
        reason = reason or "; ".join(notes)
    if findings and k.unmodeled and not all(f.data.get("static") for f in findings):
        # The model lacks something the kernel does: the counterexample may not be real.
        verdict = "inconclusive"
        reason = ("unmodeled constructs: " + "; ".join(f"{u.construct} ({where(u)})" for u in k.unmodeled)
                  + f"; the partial model has a possible {findings[0].kind}, which those constructs may prevent")
        _mark_possible(findings, "found in a partial model: see the unmodeled constructs")
    elif findings and all(f.kind == "deadlock" and f.data.get("derived_count") for f in findings):
        # The barrier's thread count did not fold; it was taken to be the threads of every warp
        # that uses it, but some use it only under a runtime condition, and in this run they did
        # not: the count waited for may be one the kernel never asks for.
        # The same for an mbarrier whose arrival count was derived from the arrivals the kernel
        # makes, when a warp makes them only under a choice (a uniform condition left unsplit).
        verdict = "inconclusive"
        lines = sorted({n for f in findings for n in f.data["derived_count"]})
        where_ = ", ".join(f"line {n}" for n in lines)
        kinds = {f.data.get("derived_from", "named barrier") for f in findings}
        if kinds == {"named barrier"}:
            what, count, whose = "a named barrier whose thread count", "thread count", "the threads of every warp"
        else:
            what, count, whose = ("a barrier whose arrival count" if kinds == {"mbarrier"} else
                                  "a barrier whose thread or arrival count"), "count", "the arrivals of every warp"
        reason = (f"a possible deadlock at {what} does not fold ({where_}): it was taken to be {whose} that uses "
                  f"it, and some use it only under a runtime condition or a choice of the build, so in this run "
                  f"the barrier may wait for more than the kernel asks for; pin the count (`# cutespin: "
                  f"NAME=VALUE` for the value it is computed from) to decide")
        _mark_possible(findings, f"the {count} of the barrier waited on at {where_} was derived from warps that "
                                 f"use it only under a runtime condition or a choice of the build")
    elif findings and any(f.data.get("inexact") for f in findings):
        # The race goes through accesses taken as the whole buffer because their element index
        # did not fold, or because the buffer has more per-lane element sets than the model
        # keeps apart (frontend.split_blocks): on the GPU they may touch different elements.
        verdict = "inconclusive"
        lines = sorted({n for f in findings for n in f.data.get("inexact", [])})
        where_ = ", ".join(f"line {n}" for n in lines[:5]) + (" …" if len(lines) > 5 else "")
        reason = (f"a possible data race through accesses whose element index is not known ({where_}), or whose "
                  f"per-lane elements are more than the model keeps apart in one buffer: each is taken as the "
                  f"whole buffer (or the whole stage, for copies into different parts of one stage), so the race "
                  f"may be between different elements; nothing is proven")
        _mark_possible(findings, f"the accesses at {where_} are not told apart by element: they may touch "
                                 f"different elements")
    elif findings and all(f.data.get("compile_time") for f in findings):
        # The trail takes a side of `if const_expr(c):` where `c` did not fold (a host value the
        # checker cannot compute): the compiled kernel has only one side, maybe not this one.
        verdict = "inconclusive"
        lines = list(dict.fromkeys(n for f in findings for n in f.data["compile_time"]))
        where_ = ", ".join(lines[:5]) + (" …" if len(lines) > 5 else "")
        reason = (f"a possible {findings[0].kind} in a build where the compile-time conditions at {where_} take "
                  f"the sides the trail shows: their values did not fold, and the compiled kernel keeps one side "
                  f"only; pin the values they depend on (`# cutespin: NAME=VALUE`) to decide")
        _mark_possible(findings, f"only if the compile-time conditions at {where_} take the sides shown")
    elif findings and k.data_bounds and all(f.kind == "deadlock" for f in findings):
        # A persistent loop whose tiles one warp computes and hands to the others through shared
        # memory: the model pairs the two loops' trip counts by their text, not by the tiles
        # handed over, so the count one side waits for may be one the other never produces.
        verdict = "inconclusive"
        where_ = ", ".join(f"`{text}` (line {line})" for text, line in k.data_bounds[:3])
        reason = (f"a possible deadlock in loops bounded by data another warp hands over: {where_}; the model "
                  f"pairs their trip counts with the computing warp's, which may not match the tiles handed over")
        _mark_possible(findings, f"the trip counts of {where_} are paired by assumption")
    elif findings:
        verdict = "counterexample"
    elif suppressed:
        verdict = "inconclusive"
        reason = "the counterexample found was suppressed; the search stops at the first error"
    elif k.unmodeled:
        verdict = "inconclusive"
        reason = reason or "unmodeled constructs: " + "; ".join(f"{u.construct} ({where(u)})" for u in k.unmodeled)
    elif reason is not None:
        verdict = "inconclusive"
    else:
        verdict = "verified"
    states = run.states if run else 0
    seconds = round(run.seconds, 3) if run else 0.0
    bounds = {**k.bounds, "depth": settings.depth, "states": states, "seconds": seconds}
    stats = {"states": states, "transitions": run.transitions if run else 0, "seconds": seconds,
             "compiler": tools.compiler_name}
    return KernelResult(k.path, k.name, k.qualname, k.line, verdict, reason, bounds, assumptions, findings,
                        list(k.unmodeled), stats, whole, pm, run, suppressed, timings,
                        cut_short if verdict == "inconclusive" else None)


# A model larger than this whose configurations fall into several groups is checked one group at a
# time: `spin -a` takes time quadratic in the statements of a proctype (its source-line table is a
# sorted list it walks for every statement), and each configuration group is a branch of every
# proctype, so the parts of a large model are generated in a fraction of its time (bench/split.py:
# a 2.6 MB model of 24 groups, 3.8 s against 1.1 s for all parts; a 9 MB corpus model, 21 s against
# 4 s). Each part pays its own build of pan, so below about 1 MB one model is as fast or faster.
# A whole model over the size limit (MAX_MODEL_LINES) is split too: its parts may be within it.
SPLIT_MODEL_CHARS = 1_000_000


def _groups_to_split(k: ir.KernelModel) -> Optional[list]:
    """The configuration groups of a kernel whose whole model is over the size limit, when there
    are several (each may be within it); None otherwise."""
    try:
        groups = configuration_groups(k)
    except (TooManyGroups, ValueOutOfRange):
        return None
    return groups if len(groups) > 1 else None


# A model of more Promela statements than this is checked a group of tracked regions at a time.
# Most of a large model's statements are the race bookkeeping (each access updates every holder of
# its region's bits), and each region's is its own; what the search costs besides them is the
# kernel's control, which every part repeats. Parts of fewer statements pay less in `spin -a`
# (quadratic in a proctype's statements) and less memory per state; below the cap the extra
# builds and searches cost more than they save (bench/slices.py, bench/RESULTS.md). cuDNN's SM100
# fp8 prefill, over a million statements in one model, is checked in 7 s in slices.
SLICE_STATEMENTS = 100_000


def _search(k: ir.KernelModel, pm: Optional[PromelaModel], parts: Optional[list], settings: Settings, tools: Tools,
            token: Optional[CancelToken], timings: dict, sliced: dict):
    """Run the search on the whole model `pm`, or on one model per configuration group (`parts`)
    one after the other, all within the time bound; a group (or the whole kernel, the part None)
    whose model is over SLICE_STATEMENTS is checked a group of tracked regions at a time (what
    `_models` records in `sliced`). Yields (kernel searched, its model, RunResult, None) per
    search, or (kernel, None, None, reason) when a model is over the size limit; the caller stops
    at the first result that is not a clean pass. Stage times add up in `timings`."""
    start = time.monotonic()
    for group in parts or [None]:
        sub = k if group is None else ir.restrict_configs(k, group)
        # The part None without a model: the whole kernel, already found over the cap (run_kernel).
        models = [pm] if pm is not None and group is None else \
            _models(sub, sliced, over_cap=group is None)
        for pm in _timed(models, timings):
            if isinstance(pm, str):
                where = f" (in the configuration {sub.configs[0].describe()})" if group is not None else ""
                yield sub, None, None, f"model too large: {pm}{where}"
                return
            left = settings.timeout - (time.monotonic() - start)
            if left <= 0:
                yield sub, pm, RunResult(status="incomplete", incomplete="time"), None
                return
            key = model_key(pm.text, settings, tools)
            run = CACHE.get(key)
            if run is None:
                run = check_model(pm.text, tools, timeout=left, depth=settings.depth, memory_mb=settings.memory_mb,
                                  token=token)
                # A part cut short had only what the parts before it left of the time bound: not
                # that model's own result, so not cached. The one whole model's is.
                if run.status != "incomplete" or (group is None and not sliced):
                    CACHE.put(key, run)
                for stage, seconds in run.timings.items():
                    timings[stage] = timings.get(stage, 0.0) + seconds
            else:
                timings["cached"] = 1.0
            yield sub, pm, run, None
        pm = None


def _timed(models, timings: dict):
    """The models of `models`, the time spent making each added to `timings["lower"]`."""
    it = iter(models)
    while True:
        t0 = time.monotonic()
        try:
            pm = next(it)
        except StopIteration:
            return
        timings["lower"] = timings.get("lower", 0.0) + time.monotonic() - t0
        yield pm


def _models(k: ir.KernelModel, sliced: dict, cap: Optional[int] = None, over_cap: bool = False):
    """The model of `k`, or when it is over `cap` statements (SLICE_STATEMENTS by default; known
    to be when `over_cap`) one model per group of its tracked regions, halving the groups until
    each fits (a single region's model has the size limits only). Yields each PromelaModel, or
    the reason a model is too large (and stops). Adds the tracked regions to `sliced["all"]` and
    each model's group to `sliced["models"]`."""
    cap = SLICE_STATEMENTS if cap is None else cap
    if not over_cap:
        try:
            yield lower(k, statement_cap=cap)
            return
        except OverStatementCap:
            pass
        except (ModelTooLarge, TooManyGroups, ValueOutOfRange) as e:
            yield str(e)
            return
    weights = tracked_region_weights(k)
    heaviest = sorted(weights, key=lambda r: (-weights[r], r))
    if len(heaviest) < 2:
        try:
            yield lower(k)
        except (ModelTooLarge, TooManyGroups, ValueOutOfRange) as e:
            yield str(e)
        return
    sliced.setdefault("all", set()).update(heaviest)
    todo = [heaviest[0::2], heaviest[1::2]]  # halves of about equal weight
    while todo:
        regions = todo.pop(0)
        try:
            pm = lower(k, frozenset(regions), statement_cap=cap if len(regions) > 1 else None)
        except OverStatementCap:
            todo[:0] = [regions[0::2], regions[1::2]]
            continue
        except (ModelTooLarge, TooManyGroups, ValueOutOfRange) as e:
            yield str(e)
            return
        sliced.setdefault("models", []).append(frozenset(regions))
        yield pm


def verified_bounds(bounds: dict) -> str:
    """What a `verified` verdict covers: `loop bound 3, 2 stages, cluster 1, 2 of 31 identical warps`."""
    parts = [f"loop bound {bounds['loop']}" if bounds.get("loop") else "no runtime loops"]
    if bounds.get("stages"):
        parts.append(f"{bounds['stages']} stages")
    parts.append(f"cluster {bounds.get('cluster')}")
    warps = symmetry.describe(bounds)
    if warps:
        parts.append(warps)
    return ", ".join(parts)


def _mark_possible(findings: list, why: str) -> None:
    """Findings of a model that may not match the kernel: warnings that say why, not proofs."""
    for f in findings:
        f.possible = True
        f.message = f"possible {f.message} ({why})"


def where(u: ir.Unmodeled) -> str:
    """`line 12`, or `utils.py line 12` for a construct inside a sibling module's helper."""
    return f"{Path(u.path).name} line {u.line}" if u.path else f"line {u.line}"


def _file_lines(path: str) -> list:
    """A sibling module's lines, for `# cutespin: ignore` comments on a finding inside it."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def iter_check(text: str, path: str, settings: Settings, token: Optional[CancelToken] = None,
               only: Optional[str] = None) -> Iterator[KernelResult]:
    """Yield one result per kernel as each finishes. Raises FrontendError / ToolError."""
    tools = find_tools(settings.spin, settings.compiler)
    t0 = time.monotonic()
    models = build_models(text, path, settings)
    frontend = time.monotonic() - t0
    lines = text.splitlines()
    for k in models:
        if only is not None and k.qualname != only:
            continue
        if token is not None and token.cancelled:
            raise Cancelled()
        budget = _budget_reasons(k) if _default_bound(k) else None
        # No search ran at the default bound: the first smaller bound gets the first search's
        # share, and a model that is complete there is the result even without a verdict.
        kr = _at_smaller_bounds(k, budget, text, path, settings, tools, token, lines,
                                first_share=FIRST_SEARCH_SHARE, keep_complete=True) if budget else None
        if kr is None and _may_retry(k):
            # The time bound covers the retries too (see _at_smaller_bounds).
            kr = run_kernel(k, settings.with_overrides(timeout=settings.timeout * FIRST_SEARCH_SHARE), tools,
                            token, lines)
            if kr.cut_short:
                kr = _at_smaller_bounds(k, kr.reason, text, path, settings, tools, token, lines) or kr
        elif kr is None:
            kr = run_kernel(k, settings, tools, token, lines)
        kr.timings["frontend"] = frontend
        yield kr


# A kernel checked at the default loop bound gets this share of the time bound, and the (at most
# two) searches at smaller bounds share the rest, so all of them together stay within the time
# bound the user set (an editor waits for the whole check). The search at bound 1 may use all
# of the rest; the one at half the default bound runs only when bound 1 was verified and left at
# least RETRY_SEARCH_SHARE of the time bound.
FIRST_SEARCH_SHARE = 0.6
RETRY_SEARCH_SHARE = 0.2


def _default_bound(k) -> bool:
    """A loop bound the user did not choose, above 1: smaller ones can be tried."""
    bound = k.bounds.get("loop")
    return not k.loop_chosen and isinstance(bound, int) and bound > 1


def _may_retry(k) -> bool:
    return _default_bound(k) and not k.unmodeled


# Unmodeled reasons that come from a front-end budget that grows with the loop bound: the
# interpretation step budget, and the cap on configurations for uniform conditions that advance
# a pipeline state differently (each unrolled iteration has its own instance); and what such an
# unknown pipeline state leads to further on (its barrier, the TMA copies onto it).
_BUDGET_REASONS = ("interpretation steps", "advanced differently on the sides of the runtime condition")
_BUDGET_CONSEQUENCES = ("the pipeline state is not known", "the transaction barrier could not be resolved")


def _budget_reasons(k) -> Optional[str]:
    """Why the kernel is not fully modeled, when that is only a budget and what it left unknown
    (anything else stays unmodeled at any bound: not worth building the kernel again)."""
    def local(u):  # a condition that may differ between warps is no budget
        return "may differ between warps" not in u.why
    primary = [u for u in k.unmodeled if local(u) and any(r in u.why for r in _BUDGET_REASONS)]
    if not primary or not all(u in primary or local(u) and any(r in u.why for r in _BUDGET_CONSEQUENCES)
                              for u in k.unmodeled):
        return None
    return "the kernel is not fully modeled: " + "; ".join(sorted({u.why for u in primary}))


def _at_smaller_bounds(k, why: str, text: str, path: str, settings: Settings, tools, token, lines,
                       first_share: float = RETRY_SEARCH_SHARE, keep_complete: bool = False):
    """A kernel cut short at the *default* loop bound (`why`): the search ran out of time or
    memory, the model is over the size limit, or the front end ran out of budget. It is checked
    again at smaller bounds within what is left of the time bound (`first_share` and
    RETRY_SEARCH_SHARE of it): first at bound 1 (the smallest model, the likeliest to reach a
    verdict), which may use all of it, then, if that was verified and left a search's share, at
    half the default bound. A counterexample ends the search; otherwise the largest bound
    that reached a verdict is the result, with an assumption that says what was cut short
    (docs/policies.md P9). None when no smaller bound gives a verdict (the caller keeps its own
    result), except with `keep_complete` (the default bound's model is not complete: the front
    end ran out of budget): then a smaller bound's complete model whose search was cut short is
    the result, inconclusive, so the report names the search's limit rather than a budget a
    smaller bound already relieved. A bound the user chose (setting or `loop` pin) is never
    changed."""
    bound = k.bounds.get("loop")
    start = time.monotonic()
    best = complete = None
    # A search at bound 1 cut short at RETRY_SEARCH_SHARE of the time bound used to leave the
    # rest unused (the next bound runs only after a verdict at bound 1): MoE GEMMs of a dozen
    # configuration groups need more than that to build and search their parts.
    left = settings.timeout * (first_share + RETRY_SEARCH_SHARE)
    for b in sorted({1, max(1, bound // 2)}):
        if token is not None and token.cancelled:
            raise Cancelled()
        spent = time.monotonic() - start
        if b > 1 and (best is None or left - spent < settings.timeout * RETRY_SEARCH_SHARE):
            break  # nothing verified at bound 1, or no time left for another front end and search
        smaller = settings.with_overrides(loop_bound=b)
        m = next(iter(build_models(text, path, smaller, only=k.qualname)), None)
        if m is None or m.unmodeled:
            continue
        # What bound 1 left (at least a search's share, by the test above); as at the default
        # bound, this bound's own front end is not counted.
        search = left if b == 1 else left - spent
        got = run_kernel(m, smaller.with_overrides(timeout=search), tools, token, lines)
        got.assumptions.append(f"at the default loop bound {bound} the check was cut short ({why}); "
                               f"this {'result' if got.verdict == 'inconclusive' else 'verdict'} is for runtime "
                               f"loops of at most {b} trips")
        got.model.loop_chosen = False
        if got.verdict == "inconclusive":
            complete = complete or got
            continue
        best = got
        if got.verdict != "verified":
            break  # a counterexample at a smaller bound is one at the default bound too
    return best or (complete if keep_complete else None)


def check_source(text: str, path: str, settings: Settings, token: Optional[CancelToken] = None,
                 with_fixes: bool = True) -> FileResult:
    try:
        kernels = list(iter_check(text, path, settings, token))
    except FrontendError as e:
        return FileResult(path, [], error=f"cannot analyze {path}: {e}")
    except InternalError as e:
        return FileResult(path, [], error=f"internal error (a cutespin bug; please report it): {e}")
    if with_fixes and settings.verify_fixes:
        from .fixes import attach_fixes
        for kr in kernels:
            if kr.findings:
                attach_fixes(kr, text, settings, token)
    return FileResult(path, kernels)


def promela_for(text: str, path: str, settings: Settings, qualname: str) -> Optional[PromelaModel]:
    for k in build_models(text, path, settings):
        if k.qualname == qualname:
            try:
                # The model the check searched: identical warps cut to two, as in run_kernel.
                return lower(symmetry.reduce_identical_warps(k))
            except (TooManyGroups, ModelTooLarge, ValueOutOfRange):
                return None
    return None


def sync_lines(kr: KernelResult) -> list:
    """Source lines of the operations the kernel's model contains (barriers, arrives, waits,
    copies, tracked accesses), for editor hovers on a verified kernel's barrier lines."""
    if kr.promela is None:
        return []
    return sorted({i.span.line for i in kr.promela.lines.values() if i.span is not None and not i.span.path})


def barrier_inits(kr: KernelResult) -> list:
    """Per mbarrier initialisation (a `mbarrier_init` or a pipeline `create`): the expected arrival
    count and the arrivals per phase the model derives (`ir.arrivals_per_phase`, as the
    arrival-count fix counts them; None when the arriving roles arrive a different number of
    times). For editor inlay hints."""
    k = kr.model
    if k is None:
        return []
    inits = {}
    for p in k.processes:
        for op in ir.walk(p.variants[-1] if p.variants else []):
            if isinstance(op, ir.MbInit):
                inits.setdefault(op.bar.index, op)
    out = []
    for index, init in sorted(inits.items()):
        if init.span.path:  # initialised inside a sibling module's code (a pipeline subclass's create)
            continue
        total, per_phase = ir.arrivals_per_phase(k, index)
        out.append({"line": init.span.line, "end_line": init.span.end_line, "end_column": init.span.end_column,
                    "barrier": init.bar.name, "cta": init.bar.cta, "expected": init.count,
                    "per_phase": per_phase, "arrivals": total})
    return out


__all__ = ["check_source", "iter_check", "run_kernel", "KernelResult", "FileResult", "ToolError", "Cancelled",
           "CancelToken", "FrontendError", "promela_for", "sync_lines", "barrier_inits"]
