"""Quick fixes: edits located with libcst, each re-verified through the same pipeline.

Each proposer looks at a finding, the kernel's IR and the source, and returns candidate `Fix`es
(edits only). `attach_fixes` applies each candidate to the text, re-checks the kernel and marks
the fix verified when the patched kernel has no finding left and its verdict is no worse.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from .. import ir
from ..model import symmetry
from ..findings import Edit, Finding, Fix
from . import source as S


def attach_fixes(kr, text: str, settings, token=None) -> None:
    """Propose fixes for every finding of a kernel result and re-verify each one."""
    from .. import api

    try:
        src = S.Source(text)
    except cst.ParserSyntaxError:
        return
    for f in kr.findings:
        if f.path != kr.path or any(r.path != kr.path for r in f.related):
            continue  # the fixes edit the analyzed file; this interleaving runs through a sibling module
        candidates = propose(f, kr, src)
        seen = set()
        for fix in candidates:
            patched = S.apply_edits(text, fix.edits)
            if patched in seen or patched == text:
                continue
            seen.add(patched)
            fix.verified = _recheck(api, patched, kr, settings, token)
            f.fixes.append(fix)
        verified = [x for x in f.fixes if x.verified]
        if len(verified) >= 1:
            verified[0].preferred = True
        f.fixes.sort(key=lambda x: not x.verified)


def _recheck(api, patched: str, kr, settings, token) -> bool:
    try:
        results = list(api.iter_check(patched, kr.path, settings, token, only=kr.qualname))
    except Exception as e:  # noqa: BLE001 - a fix that breaks the front end is simply not verified
        if type(e).__name__ == "Cancelled":
            raise
        return False
    if len(results) != 1:
        return False
    new = results[0]
    if new.findings:
        return False
    if new.verdict == "verified":
        return True
    # No worse: an inconclusive kernel may stay inconclusive for the same unmodeled reasons.
    return kr.verdict == "inconclusive" and new.verdict == "inconclusive"


def propose(f: Finding, kr, src: "S.Source") -> list:
    k: ir.KernelModel = kr.model
    out = []
    for proposer in PROPOSERS.get(f.kind, ()):
        try:
            out += proposer(f, k, src)
        except (KeyError, ValueError, IndexError, AttributeError):
            continue
    return out


# ------------------------------------------------------------------------------------------ race


def _elected_arrives_after_lane_writes(k: ir.KernelModel, region: Optional[int]):
    """Arrives made by one elected lane of a warp whose other lanes wrote a buffer before it
    (the racing buffer `region` when the finding names one: an elected arrive after writes of an
    unrelated buffer cannot be what the race needs)."""
    hits = []
    for p in k.processes:
        multi = len(p.lane_classes) > 1
        if not multi:
            continue
        for ops in p.variants:
            wrote_other = set()
            for op in ops:
                if isinstance(op, ir.Access) and op.write and (region is None or op.region.index == region):
                    wrote_other |= {ci for ci in range(len(p.lane_classes)) if op.lanes >> ci & 1}
                if isinstance(op, ir.SyncWarp):
                    wrote_other = set()
                if isinstance(op, ir.MbArrive) and op.release and bin(op.lanes).count("1") == 1:
                    ci = op.lanes.bit_length() - 1
                    if wrote_other - {ci}:
                        hits.append((p, op))
    return hits


def _not_a_lane_release(f: Finding) -> bool:
    """Findings no sync_warp / all-lane arrive can fix: an asynchronous read still in flight (its
    wait is missing) or a TMEM dealloc (a barrier with the other roles is missing)."""
    return f.data.get("sub") == "async_read" or f.data.get("op") == "dealloc"


def fix_sync_warp(f: Finding, k, src) -> list:
    if _not_a_lane_release(f):
        return []
    fixes = []
    done = set()
    for p, op in _elected_arrives_after_lane_writes(k, f.data.get("region")):
        stmt = src.enclosing_elect_or_statement(op.span)
        if stmt is None or stmt in done:
            continue
        done.add(stmt)
        line = src.line_of(stmt)
        edit = S.insert_before(src, line, "cute.arch.sync_warp()")
        fixes.append(Fix("Add cute.arch.sync_warp() before the elected arrive", [S.edit(f.path, edit)]))
    return fixes


def fix_all_lanes_arrive(f: Finding, k, src) -> list:
    if _not_a_lane_release(f):
        return []
    fixes = []
    for p, op in _elected_arrives_after_lane_writes(k, f.data.get("region")):
        with_stmt = src.enclosing_elect(op.span)
        init = _init_of(k, op.bar)
        if with_stmt is None or init is None:
            continue
        lanes = sum(c.size for c in p.lane_classes)
        body = src.with_body_dedented(with_stmt)
        if body is None:
            continue
        call = src.call_at(init.span)
        if call is None:
            continue
        if src.code(call.func).endswith("mbarrier_init") and len(call.args) >= 2:
            count_arg = call.args[1].value
        elif src.code(call.func).endswith(".create"):
            side = "consumer_group" if ".empty" in op.bar.name else "producer_group"
            count_arg = src.group_size_argument(call, side)
            if count_arg is None:
                count_arg = src.group_agent_argument(call, side)
                if count_arg is None:
                    continue
                edits_extra = [S.edit(f.path, S.add_keyword(src, src.parent_call(count_arg), "size", str(lanes)))]
                body = src.with_body_dedented(with_stmt)
                if body is None:
                    continue
                fixes.append(Fix(f"Make all {lanes} lanes commit (group size {lanes}, drop the elect_one guard)",
                                 [S.edit(f.path, S.replace_node(src, with_stmt, body))] + edits_extra))
                break
        else:
            continue
        new_count = _times(src.code(count_arg), lanes)
        edits = [S.edit(f.path, S.replace_node(src, with_stmt, body)),
                 S.edit(f.path, S.replace_node(src, count_arg, new_count))]
        fixes.append(Fix(f"Make all {lanes} lanes arrive (init count x {lanes}, drop the elect_one guard)", edits))
        break
    return fixes


def _times(expr: str, n: int) -> str:
    try:
        return str(int(expr, 0) * n)
    except ValueError:
        return f"({expr}) * {n}"


def _init_of(k: ir.KernelModel, bar: ir.Barrier):
    for p in k.processes:
        for ops in p.variants:
            for op in ir.walk(ops):
                if isinstance(op, ir.MbInit) and op.bar.index == bar.index:
                    return op
    return None



# ------------------------------------------------------------------------------------------ scope


def fix_acquire_fence_after_wait(f: Finding, k, src) -> list:
    call = src.call_at(f.span)
    if call is None or not src.code(call.func).endswith(("mbarrier_wait", "mbarrier_try_wait")):
        return []
    stmt = src.enclosing_statement(call)
    edit = S.insert_after(src, stmt, "cute.arch.fence_acq_rel_cluster()")
    return [Fix("Add cute.arch.fence_acq_rel_cluster() after the wait (cluster-scope acquire)", [S.edit(f.path, edit)])]


def fix_raise_scope(f: Finding, k, src) -> list:
    call = src.call_at(f.span)
    if call is None or not src.code(call.func).endswith(("arrive", "red", "store", "load", "atomic_add", "atomic_exch")):
        return []
    needed = "cluster" if "remote arrive" in f.message else _needed_scope(f.message)
    fixes = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "scope":
            val = arg.value
            if isinstance(val, cst.SimpleString):
                new = f'"{needed}"'
            elif isinstance(val, cst.Attribute):
                new = src.code(val.value) + "." + needed.upper()
            else:
                return []
            fixes.append(Fix(f"Raise the scope to {needed}", [S.edit(f.path, S.replace_node(src, val, new))]))
            return fixes
    # No scope argument: the default is CTA scope.
    prefix = src.alias_for("cutlass._mlir.dialects.nvvm")
    edits = []
    if prefix is None:
        prefix = "nvvm"
        edits.append(S.edit(f.path, S.insert_import(src, "from cutlass._mlir.dialects import nvvm")))
    value = f"{prefix}.MemScopeKind.{needed.upper()}"
    edits.append(S.edit(f.path, S.add_keyword(src, call, "scope", value)))
    return [Fix(f"Raise the scope to {needed}", edits)]


def _needed_scope(message: str) -> str:
    for s in ("sys", "gpu", "cluster"):
        if f"needs {s}" in message:
            return s
    return "gpu"


# ------------------------------------------------------------------------------------------ fence


def fix_proxy_fence(f: Finding, k, src) -> list:
    target_line = None
    for p in k.processes:
        for ops in p.variants:
            last_barrier = None
            for op in ops:
                if isinstance(op, ir.NamedBarrier):
                    last_barrier = op
                if isinstance(op, ir.TmaStore) and op.span == f.span:
                    target_line = (last_barrier or op).span.line
                    break
            if target_line:
                break
        if target_line:
            break
    if target_line is None:
        target_line = f.span.line
    stmt = src.statement_at_line(target_line)
    line = src.line_of(stmt) if stmt is not None else target_line
    edit = S.insert_before(src, line, "cute.arch.fence_view_async_shared()")
    return [Fix("Add cute.arch.fence_view_async_shared() after the shared-memory writes, before the handoff",
                [S.edit(f.path, edit)])]


def _cp_async_waits(k: ir.KernelModel):
    """Every cp_async_wait_group op of the kernel with the op that follows it in its warp."""
    out = []
    for p in k.processes:
        for ops in p.variants:
            flat = list(ir.walk(ops))
            for i, op in enumerate(flat):
                if isinstance(op, ir.CpAsyncWait):
                    out.append((op, flat[i + 1] if i + 1 < len(flat) else None))
    return out


def _cp_async_race(f: Finding, k) -> bool:
    return f.data.get("op") in ("load", "cp_async") and any(
        isinstance(op, ir.CpAsyncCopy) and op.region.index == f.data.get("region")
        for p in k.processes for ops in p.variants for op in ir.walk(ops))


def fix_barrier_after_cp_async_wait(f: Finding, k, src) -> list:
    """cp.async data is visible to the issuing thread only: add sync_threads() after every
    cp_async_wait_group that no barrier follows."""
    if not _cp_async_race(f, k):
        return []
    edits, done = [], set()
    for wait, nxt in _cp_async_waits(k):
        if isinstance(nxt, ir.NamedBarrier) and nxt.wait:
            continue
        stmt = src.statement_at_line(wait.span.line)
        if stmt is None or stmt in done:
            continue
        done.add(stmt)
        edits.append(S.edit(f.path, S.insert_after(src, stmt, "cute.arch.sync_threads()")))
    if not edits:
        return []
    return [Fix("Add cute.arch.sync_threads() after cp_async_wait_group so every thread sees the other threads' "
                "copies", edits)]


def fix_deeper_cp_async_wait(f: Finding, k, src) -> list:
    """Wait for one more cp.async group (`cp_async_wait_group(n - 1)`) where n > 0."""
    if not _cp_async_race(f, k):
        return []
    edits, done = [], set()
    for wait, _ in _cp_async_waits(k):
        call = src.call_at(wait.span)
        if call is None or call in done or wait.pending == 0 or not call.args:
            continue
        done.add(call)
        arg = call.args[0].value
        edits.append(S.edit(f.path, S.replace_node(src, arg, f"{src.code(arg)} - 1")))
    if not edits:
        return []
    return [Fix("Wait for one more cp.async group (cp_async_wait_group(n - 1)) before reading", edits)]


def _releases_with_reads_in_flight(k: ir.KernelModel, region: int, kind: str) -> list:
    """Arrives a warp makes while an asynchronous read (`kind`) of `region` it issued is not yet
    retired by a wait, in op order (runtime branches: every alternative)."""
    hits = []
    for p in k.processes:
        for ops in p.variants:
            pending: list = []
            for op in ir.walk(ops):
                if isinstance(op, ir.AsyncRead) and op.kind == kind and op.region.index == region:
                    pending.append(op)
                elif isinstance(op, ir.AsyncReadWait) and op.kind == kind:
                    done = {id(r) for r in op.done_reads}
                    pending = [r for r in pending if id(r) not in done]
                elif isinstance(op, ir.MbArrive) and pending:
                    hits.append(op)
    return hits


def _insert_before_releases(f: Finding, k, src, kind: str, statement: str) -> list:
    edits, done = [], set()
    for arrive in _releases_with_reads_in_flight(k, f.data.get("region"), kind):
        # The waits are warp-collective (.sync.aligned): before an `elect_one()` block, not inside.
        stmt = src.enclosing_elect(arrive.span) or src.statement_at_line(arrive.span.line)
        if stmt is None or stmt in done:
            continue
        done.add(stmt)
        edits.append(S.edit(f.path, S.insert_before(src, src.pos[stmt].start.line, statement)))
    return edits


def _cute(src) -> str:
    return src.alias_for("cutlass.cute") or "cutlass.cute"


def fix_wgmma_wait_before_release(f: Finding, k, src) -> list:
    """A stage released while the wgmmas reading it are in flight: `warpgroup.wait_group(0)` before
    each such release (the simplest order; keeping MMAs in flight needs releasing stage k-1 instead)."""
    if f.data.get("sub") != "async_read":
        return []
    edits = _insert_before_releases(f, k, src, "wgmma", f"{_cute(src)}.nvgpu.warpgroup.wait_group(0)")
    if not edits:
        return []
    return [Fix("Retire the warpgroup MMAs with cute.nvgpu.warpgroup.wait_group(0) before releasing the stage",
                edits)]


def fix_tmem_load_fence_before_release(f: Finding, k, src) -> list:
    """An accumulator released while tcgen05.ld loads from it are in flight:
    `fence_view_async_tmem_load()` before each such release."""
    if f.data.get("sub") != "async_read":
        return []
    edits = _insert_before_releases(f, k, src, "tmem_ld", f"{_cute(src)}.arch.fence_view_async_tmem_load()")
    if not edits:
        return []
    return [Fix("Wait for the TMEM loads with cute.arch.fence_view_async_tmem_load() before releasing the "
                "accumulator", edits)]


# The UMMA variant of a pipeline class whose consumer is a tcgen05 MMA warp (its consumer_release
# is a tcgen05.commit), and the create() keywords that variant takes (cute-sync-api.md §9.5).
UMMA_VARIANTS = {"PipelineTmaAsync": "PipelineTmaUmma", "PipelineAsync": "PipelineAsyncUmma"}
UMMA_CREATE_KEYWORDS = {
    "PipelineTmaUmma": {"num_stages", "producer_group", "consumer_group", "tx_count", "barrier_storage",
                        "cta_layout_vmnk", "mcast_mode_mn", "enable_multicast_signaling", "defer_sync", "name"},
    "PipelineAsyncUmma": {"num_stages", "producer_group", "consumer_group", "barrier_storage", "cta_layout_vmnk",
                          "defer_sync", "name"},
}


def fix_umma_pipeline_class(f: Finding, k, src) -> list:
    """A stage refilled while a tcgen05 MMA may still read it: when the kernel creates its ring as a
    `PipelineTmaAsync` / `PipelineAsync` (a plain-arrive release), offer the UMMA variant, whose
    `consumer_release` is a tcgen05.commit. One fix per create call whose keywords the variant
    takes; the re-check tells which one is the MMA warp's ring."""
    if f.data.get("sub") != "async_read" or "tcgen05 MMA" not in f.message:
        return []
    fixes = []
    for call in src.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "create"
                and isinstance(func.value, cst.Attribute) and func.value.attr.value in UMMA_VARIANTS):
            continue
        old = func.value.attr.value
        new = UMMA_VARIANTS[old]
        if any(a.keyword is None or a.keyword.value not in UMMA_CREATE_KEYWORDS[new] for a in call.args):
            continue
        edit = S.replace_node(src, func.value.attr, new)
        fixes.append(Fix(f"Create the ring as {new} (its consumer_release is a tcgen05.commit, which arrives "
                         f"once the MMAs are done) instead of {old} (line {src.line_of(call)})",
                         [S.edit(f.path, edit)]))
    return fixes


# ------------------------------------------------------------------------------------------ deadlock


def fix_expected_count(f: Finding, k, src) -> list:
    bar_idx = f.data.get("barrier")
    pending = f.data.get("pending")
    if bar_idx is None or not pending:
        return []
    init = _init_of(k, k.barriers[bar_idx])
    if init is None or init.count - pending <= 0:
        return []
    if ("mbar", bar_idx) in symmetry.lowered_counts(k):
        return []  # `pending` counts the arrivals of the warps checked, not of all of them
    call = src.call_at(init.span)
    if call is None or len(call.args) < 2 or not src.code(call.func).endswith("mbarrier_init"):
        return []
    new = str(init.count - pending)
    return [Fix(f"Set the expected arrival count of {k.barriers[bar_idx].name.split(' (')[0]} to {new}",
                [S.edit(f.path, S.replace_node(src, call.args[1].value, new))])]


def fix_other_parity(f: Finding, k, src) -> list:
    out = []
    for b in f.data.get("blocked", [])[:2]:
        if b.get("op") != "wait":
            continue
        call = src.call_at_line(b["line"], "mbarrier_wait")
        if call is None or len(call.args) < 2:
            continue
        parity = call.args[1].value
        text = src.code(parity)
        new = {"0": "1", "1": "0"}.get(text, f"1 - {text}" if isinstance(parity, cst.Name) else f"1 - ({text})")
        out.append(Fix("Wait on the other parity", [S.edit(f.path, S.replace_node(src, parity, new))]))
    return out


def fix_flip_phase_at_wrap(f: Finding, k, src) -> list:
    """A ring whose stage index wraps but whose phase variable is not flipped at the wrap."""
    out = []
    for wait_call, phase_name, wrap_if in src.unflipped_wraps():
        edit = S.insert_into_block_end(src, wrap_if, f"{phase_name} ^= 1")
        out.append(Fix(f"Flip `{phase_name}` when the stage index wraps", [S.edit(f.path, edit)]))
    return out


def fix_named_barrier_count(f: Finding, k, src) -> list:
    blocked = f.data.get("blocked", [])
    if not blocked or blocked[0].get("op") not in ("named_wait", "named_arrive"):
        return []
    line = blocked[0]["line"]
    ids = set()
    for p in k.processes:
        for ops in p.variants:
            for op in ir.walk(ops):
                if isinstance(op, ir.NamedBarrier) and op.span.line == line:
                    ids.add((p.cta, op.barrier_id, op.threads))
    if len(ids) != 1:
        return []
    cta, bid, threads = ids.pop()
    if threads is None:
        return []
    warps = {p.warp for p in k.processes if p.cta == cta for ops in p.variants for op in ir.walk(ops)
             if isinstance(op, ir.NamedBarrier) and op.barrier_id == bid}
    new = 32 * len(warps)
    fn = src.function_at_line(k.line)
    node = src.find_int_argument(threads, ("num_threads", "number_of_threads"), within=fn)
    if node is None or new == threads:
        return []
    return [Fix(f"Set the named barrier's thread count to {new} ({len(warps)} participating warps)",
                [S.edit(f.path, S.replace_node(src, node, str(new)))])]


def fix_arrival_count_mismatch(f: Finding, k, src) -> list:
    """An init count that differs from the arrivals every phase receives (counted over the
    longest trip-count configuration: total arrivals / uses, where every arriving role arrives
    once per use)."""
    out = []
    for bar in k.barriers:
        init = _init_of(k, bar)
        if init is None:
            continue
        _, per_phase = ir.arrivals_per_phase(k, bar.index)
        if per_phase is None or per_phase == init.count:
            continue
        call = src.call_at(init.span)
        if call is None:
            continue
        name = bar.name.split(" (")[0]
        if src.code(call.func).endswith("mbarrier_init") and len(call.args) >= 2:
            out.append(Fix(f"Set the expected arrival count of {name} to {per_phase} (the arrivals each phase "
                           f"receives)", [S.edit(f.path, S.replace_node(src, call.args[1].value, str(per_phase)))]))
        elif src.code(call.func).endswith(".create"):
            # A pipeline: the count comes from its producer (full) or consumer (empty) group.
            side = "consumer_group" if ".empty" in name else "producer_group"
            size = src.group_size_argument(call, side)
            if size is not None:
                out.append(Fix(f"Size the pipeline's {side.replace('_', ' ')} to {per_phase} arrivals per phase "
                               f"(what its releases deliver)", [S.edit(f.path, S.replace_node(src, size, str(per_phase)))]))
    return out


def fix_tx_bytes(f: Finding, k, src) -> list:
    """Expected transaction bytes that differ from what the TMA copies on the barrier deliver."""
    out = []
    for bar in k.barriers:
        expects, loads = [], []
        for p in k.processes:
            for op in p.variants[-1]:
                if isinstance(op, (ir.MbArrive, ir.MbExpectTx)) and op.bar.index == bar.index and op.tx:
                    expects.append(op)
                elif isinstance(op, ir.TmaLoad) and op.bar.index == bar.index:
                    loads.append(op)
        if not expects or not loads:
            continue
        expected, delivered = sum(e.tx for e in expects), sum(t.tx for t in loads)
        if expected == delivered or delivered % len(expects):
            continue
        per_expect = delivered // len(expects)
        sites = {e.span for e in expects}
        if len(sites) != 1:
            continue
        call = src.call_at(next(iter(sites)))
        if call is None or len(call.args) < 2:
            continue
        name = bar.name.split(" (")[0]
        out.append(Fix(f"Expect {per_expect} transaction bytes on {name} (what the TMA copies deliver)",
                       [S.edit(f.path, S.replace_node(src, call.args[1].value, str(per_expect)))]))
    return out


# ------------------------------------------------------------------------------------------ exit


def fix_trailing_cluster_barrier(f: Finding, k, src) -> list:
    fn = src.function_at_line(k.line)
    if fn is None:
        return []
    edit = S.append_to_function(src, fn, ["cute.arch.cluster_arrive()", "cute.arch.cluster_wait()"])
    return [Fix("Add a trailing cluster barrier so no CTA exits while its peer still uses its shared memory",
                [S.edit(f.path, edit)])]


def fix_init_fence(f: Finding, k, src) -> list:
    """Add mbarrier_init_fence() after the top-level statement that initialises the barrier."""
    bar_idx = f.data.get("barrier")
    if bar_idx is None or f.data.get("sub") != "unfenced":
        return []
    init = _init_of(k, k.barriers[bar_idx])
    call = src.call_at(init.span) if init else None
    fn = src.function_at_line(k.line)
    if call is None or fn is None:
        return []
    top = src.top_level_statement(call, fn)
    if top is None:
        return []
    edit = S.insert_after(src, top, "cute.arch.mbarrier_init_fence()")
    return [Fix("Add cute.arch.mbarrier_init_fence() after the barrier initialisation", [S.edit(f.path, edit)])]


PROPOSERS = {
    "race": (fix_sync_warp, fix_all_lanes_arrive, fix_flip_phase_at_wrap, fix_arrival_count_mismatch,
             fix_barrier_after_cp_async_wait, fix_deeper_cp_async_wait, fix_wgmma_wait_before_release,
             fix_tmem_load_fence_before_release, fix_umma_pipeline_class),
    "scope": (fix_raise_scope, fix_acquire_fence_after_wait),
    "fence": (fix_proxy_fence,),
    "deadlock": (fix_named_barrier_count, fix_arrival_count_mismatch, fix_tx_bytes, fix_expected_count,
                 fix_flip_phase_at_wrap, fix_other_parity),
    "overrun": (fix_arrival_count_mismatch, fix_expected_count),
    "exit": (fix_trailing_cluster_barrier,),
    "init": (fix_init_fence,),
}
