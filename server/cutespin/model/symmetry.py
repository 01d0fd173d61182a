"""Identical warps checked as two: a bound on the model, stated like the loop bound.

Warps of one CTA whose op lists are equal in every trip-count configuration (the 31 sorting warps
of frost's prologue, the reduction warps of a norm kernel) differ only in the elements they
touch, which the model already folds into the same regions. Between two barriers every subset of
N such warps may have arrived, so the states grow as 2^N: a CTA of 32 warps never finishes
(8 warps: 8,667 states; 32: past any time bound). Two members exhibit every interaction between
members (a race between two of them, two of them on different sides of a runtime branch) and one
member every interaction with another warp, so the check keeps two and the verdict says so
("2 of 31 identical warps"), as it says which loop bound it covers.

Only warps that never signal a counted barrier are merged: mbarrier arrival counts, transaction
bytes and flag values count the warps that arrive or update, and leaving some out would change
them. A named barrier whose thread count is every user's threads (`sync_threads`, or `bar.sync
id, T` where T is what all of its users contribute) keeps that meaning with fewer users: an
explicit count is lowered by the threads of the warps left out; a barrier that waits for only some
of its users keeps its members all.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from .. import ir

KEPT_PER_FAMILY = 2

# Ops that count the warps that perform them (arrival counts, transaction bytes, flag values,
# initialisation by one warp): a warp doing any of them is never left out.
COUNTED_OPS = (ir.MbInit, ir.MbInitFence, ir.MbArrive, ir.MbExpectTx, ir.TmaLoad, ir.FlagUpdate)


@dataclasses.dataclass(frozen=True)
class Family:
    """Identical warps of one CTA: `kept` are checked, the others left out."""

    cta: int
    warps: tuple  # every member's warp index
    kept: tuple

    def to_json(self) -> dict:
        return {"cta": self.cta, "warps": list(self.warps), "kept": list(self.kept)}


def _ops(p: ir.Process):
    for v in p.variants:
        yield from ir.walk(v)


def _named_uses(processes: list) -> tuple:
    """Per named barrier (cta, id): {process index: the thread contributions of its uses}, and
    the set of thread counts its uses give."""
    uses: dict = {}
    counts: dict = {}
    for pi, p in enumerate(processes):
        for op in _ops(p):
            if isinstance(op, ir.NamedBarrier):
                key = (p.cta, op.barrier_id)
                uses.setdefault(key, {}).setdefault(pi, set()).add(op.arriving)
                counts.setdefault(key, set()).add(op.threads)
    return uses, counts


def _scalable(key, uses: dict, counts: dict) -> bool:
    """Whether the barrier waits for every thread of its users: then the count follows the users."""
    threads = counts[key]
    if threads == {None}:
        return True  # every thread of the CTA: counted from the warps modeled
    if len(threads) != 1 or None in threads:
        return False
    contributions = uses[key].values()
    if any(len(c) != 1 for c in contributions):
        return False
    return next(iter(threads)) == sum(next(iter(c)) for c in contributions)


def _mergeable(p: ir.Process, uses: dict, counts: dict) -> bool:
    for op in _ops(p):
        if isinstance(op, COUNTED_OPS):
            return False
        if isinstance(op, ir.NamedBarrier) and not _scalable((p.cta, op.barrier_id), uses, counts):
            return False
    return True


def families(k: ir.KernelModel, kept: int = KEPT_PER_FAMILY) -> list:
    """The families of more than `kept` identical, mergeable warps, in warp order."""
    return _families(k, kept, *_named_uses(k.processes))


def _families(k: ir.KernelModel, kept: int, uses: dict, counts: dict) -> list:
    groups: list = []  # [[process index, ...]]
    for pi, p in enumerate(k.processes):
        if not _mergeable(p, uses, counts):
            continue
        for g in groups:
            q = k.processes[g[0]]
            if q.cta == p.cta and q.lane_classes == p.lane_classes and q.variants == p.variants:
                g.append(pi)
                break
        else:
            groups.append([pi])
    out = []
    for g in groups:
        if len(g) > kept:
            ws = tuple(k.processes[pi].warp for pi in g)
            out.append(Family(k.processes[g[0]].cta, ws, ws[:kept]))
    return out


def _with_threads(ops: list, threads: dict, cta: int) -> list:
    """The ops with every scaled named barrier's explicit count replaced by `threads`."""
    out = []
    for op in ops:
        if isinstance(op, ir.NamedBarrier) and op.threads is not None and (cta, op.barrier_id) in threads:
            op = dataclasses.replace(op, threads=threads[(cta, op.barrier_id)])
        elif isinstance(op, ir.Choice):
            op = dataclasses.replace(op, alternatives=[_with_threads(a, threads, cta) for a in op.alternatives])
        out.append(op)
    return out


def reduce_identical_warps(k: ir.KernelModel, kept: int = KEPT_PER_FAMILY) -> ir.KernelModel:
    """The model with each family of identical warps cut to its first `kept` members, explicit
    named-barrier counts lowered by the threads of the warps left out, and the bound recorded in
    `bounds["identical_warps"]`. The model itself when no family has more than `kept` members."""
    uses, counts = _named_uses(k.processes)
    fams = _families(k, kept, uses, counts)
    if not fams:
        return k
    dropped = {(f.cta, w) for f in fams for w in f.warps[kept:]}
    threads: dict = {}  # explicit counts of barriers some left-out warp used, lowered by its threads
    for key, users in uses.items():
        if len(counts[key]) != 1 or None in counts[key]:
            continue  # all threads of the CTA (counted from the warps modeled), or not scalable
        left_out = sum(next(iter(c)) for pi, c in users.items()
                       if (k.processes[pi].cta, k.processes[pi].warp) in dropped)
        if left_out:
            threads[key] = next(iter(counts[key])) - left_out
    processes = []
    for p in k.processes:
        if (p.cta, p.warp) in dropped:
            continue
        if threads:
            p = dataclasses.replace(p, variants=[_with_threads(v, threads, p.cta) for v in p.variants])
        processes.append(p)
    bounds = {**k.bounds, "identical_warps": [f.to_json() for f in fams]}
    note = "; ".join(f"CTA {f.cta}: warps {_ranges(f.warps)} run the same operations, checked as warps "
                     f"{_ranges(f.kept)}" for f in fams)
    assumptions = list(k.assumptions) + [
        f"identical warps are checked as {kept} ({note}): every interaction between two of them and "
        f"with other warps is covered, not one that needs {kept + 1} of them"]
    return dataclasses.replace(k, processes=processes, bounds=bounds, assumptions=assumptions)


def describe(bounds: dict) -> Optional[str]:
    """`2 of 31 identical warps` for the verdict line, None when no warps were left out."""
    fams = bounds.get("identical_warps") or []
    if not fams:
        return None
    return ", ".join(f"{len(f['kept'])} of {len(f['warps'])} identical warps"
                     + (f" in CTA {f['cta']}" if len(fams) > 1 else "") for f in fams)


def _ranges(ws) -> str:
    """`1–31` for consecutive warp indices, else a comma list."""
    ws = list(ws)
    if len(ws) > 2 and ws == list(range(ws[0], ws[0] + len(ws))):
        return f"{ws[0]}–{ws[-1]}"
    return ", ".join(str(w) for w in ws)
