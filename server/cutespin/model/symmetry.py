"""Identical warps checked as two: a bound on the model, stated like the loop bound.

Warps of one CTA whose op lists are equal in every trip-count configuration (the 31 sorting warps
of frost's prologue, the reduction warps of a norm kernel) differ only in the elements they
touch, which the model already folds into the same regions. Between two barriers every subset of
N such warps may have arrived, so the states grow as 2^N: a CTA of 32 warps never finishes
(8 warps: 8,667 states; 32: past any time bound). Two members exhibit every interaction between
members (a race between two of them, two of them on different sides of a runtime branch) and one
member every interaction with another warp, so the check keeps two and the verdict says so
("2 of 31 identical warps"), as it says which loop bound it covers.

Counted barriers are lowered with the warps left out when their count is what every user gives:
a named barrier whose thread count is every user's threads (`sync_threads`, or `bar.sync id, T`
where T is what all of its users contribute), and an mbarrier initialised with the sum of its
arrivers' single arrive counts (the consumer release of a pipeline whose consumer group is the
consumer warps: each arrives once a phase). The explicit count is lowered by what the warps left
out give. A barrier that waits for only some of its users, or for arrivals a warp makes in
different sizes, keeps its members all; so do warps that expect transaction bytes, issue TMA
loads, initialise barriers or update flags some warp waits on (those counts and values would
change; a flag nobody waits on, a histogram's counter, decides nothing).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from .. import ir

KEPT_PER_FAMILY = 2

# Ops whose effect depends on how many warps perform them and that no count can be lowered for
# (transaction bytes, flag values, initialisation by one warp): a warp doing any of them is never
# left out. Arrivals are handled per barrier (`_counted_uses`, `_scalable`). `mbarrier_init_fence` is not
# here: it fences only the warp's own inits, and a warp that inits is never left out.
COUNTED_OPS = (ir.MbInit, ir.MbExpectTx, ir.TmaLoad, ir.FlagUpdate)


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


# A counted barrier: a named barrier `("named", cta, id)` or an mbarrier `("mbar", index)`.
UNSCALABLE = -1  # a contribution no count can be lowered by (an arrive that also expects bytes)


def _counted_uses(processes: list) -> tuple:
    """Per counted barrier: {process index: the contributions of its uses} (threads a named
    barrier use brings, arrivals an arrive makes), and the set of counts it waits for (the named
    barrier's thread count, None for every thread of the CTA; the mbarrier's init count)."""
    uses: dict = {}
    counts: dict = {}
    for pi, p in enumerate(processes):
        for op in _ops(p):
            if isinstance(op, ir.NamedBarrier):
                key = ("named", p.cta, op.barrier_id)
                uses.setdefault(key, {}).setdefault(pi, set()).add(op.arriving)
                counts.setdefault(key, set()).add(op.threads)
            elif isinstance(op, ir.MbArrive):
                key = ("mbar", op.bar.index)
                plain = not op.tx and op.tx_known and not op.cp_async
                uses.setdefault(key, {}).setdefault(pi, set()).add(op.count if plain else UNSCALABLE)
            elif isinstance(op, ir.MbInit):
                counts.setdefault(("mbar", op.bar.index), set()).add(op.count)
    return uses, counts


def _scalable(key, uses: dict, counts: dict) -> bool:
    """Whether the barrier waits for every user's contribution: then the count follows the users."""
    threads = counts.get(key, set())
    if key[0] == "named" and threads == {None}:
        return True  # every thread of the CTA: counted from the warps modeled
    if len(threads) != 1 or None in threads:
        return False
    contributions = uses[key].values()
    if any(len(c) != 1 or UNSCALABLE in c for c in contributions):
        return False
    return next(iter(threads)) == sum(next(iter(c)) for c in contributions)


def _counted_key(p: ir.Process, op) -> Optional[tuple]:
    if isinstance(op, ir.NamedBarrier):
        return ("named", p.cta, op.barrier_id)
    if isinstance(op, ir.MbArrive):
        return ("mbar", op.bar.index)
    return None


def _waited_flags(processes: list) -> set:
    return {op.flag.index for p in processes for op in _ops(p) if isinstance(op, ir.FlagWait)}


def _mergeable(p: ir.Process, uses: dict, counts: dict, waited: frozenset = frozenset()) -> bool:
    for op in _ops(p):
        if isinstance(op, ir.FlagUpdate) and op.flag.index not in waited:
            continue  # a flag no warp waits on: how many warps update it changes nothing
        if isinstance(op, COUNTED_OPS):
            return False
        key = _counted_key(p, op)
        if key is not None and not _scalable(key, uses, counts):
            return False
    return True


def families(k: ir.KernelModel, kept: int = KEPT_PER_FAMILY) -> list:
    """The families of more than `kept` identical, mergeable warps, in warp order."""
    return _families(k, kept, *_counted_uses(k.processes))


def _families(k: ir.KernelModel, kept: int, uses: dict, counts: dict) -> list:
    groups: list = []  # [[process index, ...]]
    waited = frozenset(_waited_flags(k.processes))
    for pi, p in enumerate(k.processes):
        if not _mergeable(p, uses, counts, waited):
            continue
        for g in groups:
            q = k.processes[g[0]]
            if q.cta == p.cta and _warpgroup_key(q) == _warpgroup_key(p) and q.lane_classes == p.lane_classes \
                    and q.variants == p.variants:
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


def _warpgroup_key(p: ir.Process) -> Optional[int]:
    """The warpgroup of a warp that issues wgmma reads, None for any other warp. A wgmma is one
    operation of its warpgroup, whose `wait_group` orders the other members' reads too (P12), so
    warps of different warpgroups are not the same even when their operations are."""
    wgmma = any(isinstance(op, ir.AsyncRead) and op.kind == "wgmma" for op in _ops(p))
    return p.warp // 4 if wgmma else None


def _with_counts(ops: list, lowered: dict, cta: int) -> list:
    """The ops with every lowered barrier's explicit count replaced: a named barrier's thread
    count, an mbarrier's init count."""
    out = []
    for op in ops:
        if isinstance(op, ir.NamedBarrier) and op.threads is not None and ("named", cta, op.barrier_id) in lowered:
            op = dataclasses.replace(op, threads=lowered[("named", cta, op.barrier_id)])
        elif isinstance(op, ir.MbInit) and ("mbar", op.bar.index) in lowered:
            op = dataclasses.replace(op, count=lowered[("mbar", op.bar.index)])
        elif isinstance(op, ir.Choice):
            op = dataclasses.replace(op, alternatives=[_with_counts(a, lowered, cta) for a in op.alternatives])
        out.append(op)
    return out


def reduce_identical_warps(k: ir.KernelModel, kept: int = KEPT_PER_FAMILY) -> ir.KernelModel:
    """The model with each family of identical warps cut to its first `kept` members, explicit
    barrier counts lowered by what the warps left out contribute, and the bound recorded in
    `bounds["identical_warps"]`. The model itself when no family has more than `kept` members."""
    uses, counts = _counted_uses(k.processes)
    fams = _families(k, kept, uses, counts)
    if not fams:
        return k
    dropped = {(f.cta, w) for f in fams for w in f.warps[kept:]}
    lowered = _lowered(k, dropped, uses, counts)
    processes = []
    for p in k.processes:
        if (p.cta, p.warp) in dropped:
            continue
        if lowered:
            p = dataclasses.replace(p, variants=[_with_counts(v, lowered, p.cta) for v in p.variants])
        processes.append(p)
    bounds = {**k.bounds, "identical_warps": [f.to_json() for f in fams]}
    note = "; ".join(f"CTA {f.cta}: warps {_ranges(f.warps)} run the same operations, checked as warps "
                     f"{_ranges(f.kept)}" for f in fams)
    lowered_note = "".join(f"; {_describe_count(k, key)} lowered to {n}" for key, n in sorted(lowered.items(), key=str))
    assumptions = list(k.assumptions) + [
        f"identical warps are checked as {kept} ({note}{lowered_note}): every interaction between two of "
        f"them and with other warps is covered, not one that needs {kept + 1} of them"]
    return dataclasses.replace(k, processes=processes, bounds=bounds, assumptions=assumptions)


def lowered_counts(k: ir.KernelModel, kept: int = KEPT_PER_FAMILY) -> dict:
    """The explicit barrier counts `reduce_identical_warps` lowers on the (unreduced) model `k`:
    `("mbar", index)` or `("named", cta, id)` -> the lowered count. A fix that computes a count
    from a trail of the reduced model cannot carry it back to the source for these."""
    uses, counts = _counted_uses(k.processes)
    fams = _families(k, kept, uses, counts)
    return _lowered(k, {(f.cta, w) for f in fams for w in f.warps[kept:]}, uses, counts)


def _lowered(k: ir.KernelModel, dropped: set, uses: dict, counts: dict) -> dict:
    """Explicit counts of barriers some left-out warp used, lowered by its share."""
    lowered: dict = {}
    for key, users in uses.items():
        if len(counts.get(key, ())) != 1 or None in counts[key]:
            continue  # all threads of the CTA (counted from the warps modeled), or not scalable
        left_out = sum(next(iter(c)) for pi, c in users.items()
                       if (k.processes[pi].cta, k.processes[pi].warp) in dropped)
        if left_out:
            lowered[key] = next(iter(counts[key])) - left_out
    return lowered


def _describe_count(k: ir.KernelModel, key: tuple) -> str:
    if key[0] == "named":
        return f"the thread count of named barrier {key[2]} (CTA {key[1]})"
    bar = next((b for b in k.barriers if b.index == key[1]), None)
    return f"the arrival count of {bar.name}" if bar else f"the arrival count of barrier {key[1]}"


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
