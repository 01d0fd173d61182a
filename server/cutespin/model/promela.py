"""IR -> Promela text plus a table from Promela line to source span.

Encodings (see `docs/policies.md` and `../shared/reference/spin-engine.md`):
- mbarrier b: `mb_p[b]` pending arrivals, `mb_t[b]` signed transaction count, `mb_ph[b]` phase
  number mod 4, `mb_in[b]` initialised. The expected count is a literal at each call site, or
  `mb_e[i]` (set by the init) for a barrier whose count differs between configurations.
  A wait is a blocking guard `(mb_ph[b] % 2 != parity)`, so a stuck wait is an invalid end state.
- One process per warp; its lane classes share the process but each has its own visibility set.
- Races: per tracked region r, `a_r` holds the access bits ever performed (a write and a read bit
  per group that needs them; 30 bits per word, more words as `a_<r>w1`, ...) and every *holder* (a group's visibility set, a barrier phase's release set, a
  named barrier's, the cluster barrier's, a flag's) keeps the bits it has seen. A new access by g
  clears g's bit from every holder except g's own, so only synchronization can bring it back.
- Every op is one Promela line and every line maps back to its op's source span. No identifier
  from the user's source reaches the text: all names are generated.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Optional

from .. import ir
from .prune import prune_zero_variables

WORD_BITS = 32
MAX_BITS = 30  # access bits per word: 0..29 (a Promela int is signed 32-bit)
WORD_MASK = (1 << MAX_BITS) - 1
# A region whose agents need more bits keeps them in more words (`a_5`, `a_5w1`, ...; see `wkey`).
MAX_WORDS = 4
# SPIN keeps one exit label per d_step for the whole model plus one entry per statement of the
# d_step it is compiling, in a table of 2048 (spin dstep.c, MAXDSTEP): d_steps so far plus the
# statements of any one d_step must stay below it, or `spin -a` fails ("d_step sequence too long").
MAX_DSTEPS = 1800
MAX_DSTEP_STATEMENTS = 200
# An op's effect is a placeholder `EFFECT<n>EFFECT` until `pack_effects` turns the effects of
# consecutive ops into d_steps (no user text can hold it: nothing from the source reaches the text).
EFFECT = "\x00"
MAX_MODEL_LINES = 40_000
# Statements, not lines, are what `spin -a` pays for (quadratically per proctype: a proctype of
# 48 000 statements takes it about 3 s); a model of a million is out of reach of any time bound,
# and building its text alone took seconds (a 64-stage cluster ring: 131 MB in 38 000 lines).
MAX_MODEL_STATEMENTS = 1_000_000
PRUNE_MAX_CHARS = 400_000  # larger models are not pruned (see build)
# Paths a warp's atomic sequence may hold before a runtime branch ends it (see lower_choice).
PATH_BUDGET = 64


@dataclass
class LineInfo:
    span: Optional[ir.Span]
    process: str  # role, e.g. "warp 0 (warp_idx == 0)"
    what: str  # what the step does, in words
    op: str  # op kind: "wait", "arrive", "store", ...
    barrier: Optional[int] = None
    region: Optional[int] = None


@dataclass
class Group:
    """A (process, lane class) pair, or an asynchronous agent of a process."""

    index: int
    process: int
    lane_class: Optional[int]  # None for async agents
    label: str
    bit: Optional[int] = None  # set when it accesses tracked regions
    wpos: Optional[int] = None  # its write bit (when it writes a tracked region)
    rpos: Optional[int] = None  # its read bit (when it reads a tracked region)


@dataclass
class PromelaModel:
    text: str
    lines: dict  # pml line -> LineInfo
    proc_names: dict  # proctype name -> role
    groups: list
    tracked: list  # list[ir.Region]
    bar_names: dict  # barrier index -> name
    flag_names: dict
    narrow_sites: list = field(default_factory=list)  # (span, process index, why) scope-too-narrow sites
    # (span, process index) of a narrow remote arrive -> the CTA whose waiters it fails to publish
    # to: only a stale read by a warp of that CTA can come from it.
    narrow_reach: dict = field(default_factory=dict)
    tma_store_dests: set = field(default_factory=set)  # regions written by TMA stores
    cp_async_dests: set = field(default_factory=set)  # regions written by cp.async copies
    async_read_kinds: dict = field(default_factory=dict)  # region -> kinds of asynchronous readers (AsyncRead)
    notes: list = field(default_factory=list)
    # The kernel's configurations grouped by the model they give (`Lowering.config_groups`): the
    # model chooses one group at launch (`cfg`).
    config_groups: list = field(default_factory=lambda: [[0]])


class TooManyGroups(Exception):
    """The model would need more visibility bits than a Promela int holds."""


class ModelTooLarge(Exception):
    """The unrolled model is beyond what SPIN handles interactively."""


class OverStatementCap(ModelTooLarge):
    """The model has more statements than the caller's cap (`lower(..., statement_cap=)`): it may
    still be checked a group of tracked regions at a time (`tracked_region_weights`)."""


class ValueOutOfRange(Exception):
    """A number from the source that the model cannot hold (Promela's int is 32 bits): the kernel
    is inconclusive rather than checked with a wrapped value."""


# Every number that reaches the Promela text comes from an op field listed here and is checked
# first: an int (not a bool), small enough that sums of a few of them stay inside a 32-bit int.
MAX_LITERAL = (1 << 30) - 1
_NUMBERS = {
    ir.MbInit: (("count", "mbarrier_init count"),),
    ir.MbArrive: (("count", "arrive count"), ("tx", "transaction bytes")),
    ir.MbExpectTx: (("tx", "transaction bytes"),),
    ir.MbWait: (("parity", "wait parity"),),
    ir.TmaLoad: (("tx", "TMA transaction bytes"),),
    ir.NamedBarrier: (("barrier_id", "named barrier id"), ("threads", "named barrier thread count"),
                      ("arriving", "named barrier arrivals")),
    ir.FlagUpdate: (("value", "flag value"), ("arrivals", "flag update lanes")),
    ir.FlagWait: (("value", "flag value"),),
    ir.BulkWait: (("pending", "bulk wait group count"),),
    ir.AsyncReadWait: (("pending", "warpgroup wait group count"),),
}
_COMPARISONS = {">=", ">", "==", "!=", "<", "<="}


def check_values(k: ir.KernelModel) -> None:
    """Raise ValueOutOfRange for the first op whose numbers the model cannot represent."""
    for p in k.processes:
        for ops in p.variants:
            for op in ir.walk(ops):
                fields = _NUMBERS.get(type(op), ())
                values = [(getattr(op, name), what) for name, what in fields]
                if isinstance(op, ir.FlagUpdate) and isinstance(op.value, int) and isinstance(op.arrivals, int):
                    values.append((op.value * op.arrivals, "flag value times the lanes updating it"))
                for v, what in values:
                    if v is None and what == "named barrier thread count":
                        continue
                    if not isinstance(v, int) or isinstance(v, bool) or abs(v) > MAX_LITERAL:
                        shown = repr(v) if len(repr(v)) <= 24 else f"{repr(v)[:20]}..."
                        raise ValueOutOfRange(f"line {op.span.line if op.span else '?'}: {what} {shown} is outside "
                                              f"what the model represents (integers up to 2^30 - 1)")
                if isinstance(op, ir.FlagWait) and op.cmp not in _COMPARISONS:
                    raise ValueOutOfRange(f"line {op.span.line if op.span else '?'}: comparison {op.cmp!r}")



class Lowering:
    def __init__(self, k: ir.KernelModel, regions: Optional[frozenset] = None,
                 statement_cap: Optional[int] = None):
        self.k = k
        # Races are tracked on these regions only (None: on every region that needs it). A region's
        # visibility variables and assertions are its own, so models that track different regions
        # of one kernel search the same interleavings and together check what the whole one does.
        self.only_regions = regions
        self.statement_cap = statement_cap  # OverStatementCap past it (None: MAX_MODEL_STATEMENTS only)
        self.lines: list = []  # (text, LineInfo|None)
        self.groups: list = []
        self.group_of: dict = {}  # (proc idx, class idx) -> Group
        self.tma_group: dict = {}  # proc idx -> Group
        self.bulk_group: dict = {}
        self.cp_group: dict = {}  # proc idx -> Group of its cp.async copies
        self.ar_group: dict = {}  # proc idx -> Group of its asynchronous reads (wgmma operands, tcgen05.ld)
        self.narrow_sites: list = []
        self.narrow_reach: dict = {}
        self.notes: list = []
        self.pending_acquire: dict = {}
        self.pending_global: dict = {}
        self.inited_by: dict = {}
        self.dsteps = 0
        self.effects: list = []  # op effects (statement lists) behind the placeholders (`dstep`)
        self.effect_sizes: list = []  # their sizes in SPIN's d_step table (`_statements`)
        self.statements = 0  # their sum (MAX_MODEL_STATEMENTS)
        self.group_keys: list = []  # the effective keys of the config groups (`config_groups`)
        self.paths = 1  # paths through the open atomic sequence so far
        self.inlining = False  # lowering the alternatives of a branch kept inside the sequence
        self._plan()

    # ------------------------------------------------------------------ planning
    def _plan(self):
        k = self.k
        self.nb = max(1, len(k.barriers))
        self.expected = {}
        counts: dict = {}
        for p in k.processes:
            for ops in p.variants:
                for op in ir.walk(ops):
                    if isinstance(op, ir.MbInit):
                        self.expected.setdefault(op.bar.index, op.count)
                        counts.setdefault(op.bar.index, set()).add(op.count)
        # Barriers whose count differs between configurations (derived per configuration: a warp
        # only one build has): each phase restarts with the count its init set, kept in `mb_e`.
        self.init_slot = {b: i for i, b in enumerate(sorted(b for b, cs in counts.items() if len(cs) > 1))}
        # Groups: every lane class of every process, plus async agents where used.
        for pi, p in enumerate(k.processes):
            for ci, lc in enumerate(p.lane_classes):
                g = Group(len(self.groups), pi, ci, f"{p.role}, {lc.describe()}")
                self.groups.append(g)
                self.group_of[(pi, ci)] = g
            ops = [op for v in p.variants for op in ir.walk(v)]
            if any(isinstance(op, ir.TmaLoad) for op in ops):
                g = Group(len(self.groups), pi, None, f"TMA loads issued by {p.role}")
                self.groups.append(g)
                self.tma_group[pi] = g
            if any(isinstance(op, ir.TmaStore) for op in ops):
                g = Group(len(self.groups), pi, None, f"TMA stores issued by {p.role}")
                self.groups.append(g)
                self.bulk_group[pi] = g
            if any(isinstance(op, ir.CpAsyncCopy) for op in ops):
                g = Group(len(self.groups), pi, None, f"cp.async copies issued by {p.role}")
                self.groups.append(g)
                self.cp_group[pi] = g
            if any(isinstance(op, ir.AsyncRead) for op in ops):
                g = Group(len(self.groups), pi, None, f"asynchronous reads (wgmma / tcgen05.ld) issued by {p.role}")
                self.groups.append(g)
                self.ar_group[pi] = g
        # Barriers some warp waits on: only their phases carry release sets to anyone (the sets of
        # a barrier nobody waits on are never read, so they are not kept).
        self.waited = sorted({op.bar.index for p in k.processes for v in p.variants for op in ir.walk(v)
                              if isinstance(op, ir.MbWait)})
        # Tracked regions: touched by two or more agents, at least one of them writing.
        touch: dict = {}
        writes: dict = {}
        self.async_read_regions = set()
        self.tma_store_dests = set()
        self.cp_async_dests = set()
        self.async_read_kinds: dict = {}
        for pi, p in enumerate(k.processes):
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, ir.Access):
                        touch.setdefault(op.region.index, set()).add(pi)
                        if op.write:
                            writes.setdefault(op.region.index, set()).add(pi)
                    elif isinstance(op, ir.TmaLoad):
                        for r in op.regions():
                            touch.setdefault(r.index, set()).add(("tma", pi))
                            writes.setdefault(r.index, set()).add(("tma", pi))
                    elif isinstance(op, ir.CpAsyncCopy):
                        touch.setdefault(op.region.index, set()).add(("cp", pi))
                        writes.setdefault(op.region.index, set()).add(("cp", pi))
                        self.cp_async_dests.add(op.region.index)
                    elif isinstance(op, ir.AsyncRead):
                        touch.setdefault(op.region.index, set()).add(("ar", pi))
                        self.async_read_kinds.setdefault(op.region.index, set()).add(op.kind)
                    elif isinstance(op, ir.TmaStore):
                        if op.region is not None:
                            touch.setdefault(op.region.index, set()).add(("bulk", pi))
                            self.async_read_regions.add(op.region.index)
                        if op.dest is not None:
                            touch.setdefault(op.dest.index, set()).add(("bulkw", pi))
                            writes.setdefault(op.dest.index, set()).add(("bulkw", pi))
                            self.tma_store_dests.add(op.dest.index)
        # Global memory is only a handoff when CTAs signal each other through flags; otherwise
        # warps write disjoint parts of their outputs and a whole-tensor region would only raise
        # false alarms.
        self.tracked = [r for r in k.regions if len(touch.get(r.index, ())) >= 2 and writes.get(r.index)
                        and (r.space != "gmem" or k.flags)
                        and (self.only_regions is None or r.index in self.only_regions)]
        self.tracked_ids = {r.index for r in self.tracked}
        # Which groups need bits: a write bit for groups that write a tracked region, a read bit
        # for groups that read one (an agent that only reads, like a tcgen05.ld agent, needs one).
        wneed, rneed = set(), set()
        self.region_groups: dict = {}  # tracked region -> the groups that access it

        def use(kind: set, gi: int, r: int):
            kind.add(gi)
            self.region_groups.setdefault(r, set()).add(gi)

        for pi, p in enumerate(k.processes):
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, ir.Access) and op.region.index in self.tracked_ids:
                        for ci in self._classes(op.lanes, p):
                            use(wneed if op.write else rneed, self.group_of[(pi, ci)].index, op.region.index)
                    elif isinstance(op, ir.TmaLoad):
                        for r in op.regions():
                            if r.index in self.tracked_ids:
                                use(wneed, self.tma_group[pi].index, r.index)
                    elif isinstance(op, ir.CpAsyncCopy) and op.region.index in self.tracked_ids:
                        use(wneed, self.cp_group[pi].index, op.region.index)
                    elif isinstance(op, ir.AsyncRead) and op.region.index in self.tracked_ids:
                        use(rneed, self.ar_group[pi].index, op.region.index)
                    elif isinstance(op, ir.TmaStore):
                        if op.region is not None and op.region.index in self.tracked_ids:
                            use(rneed, self.bulk_group[pi].index, op.region.index)
                        if op.dest is not None and op.dest.index in self.tracked_ids:
                            use(wneed, self.bulk_group[pi].index, op.dest.index)
        need = wneed | rneed
        # Bit positions: a write bit for each group that writes a tracked region, a read bit for
        # each that reads one. Every bit lives in per-region variables only, so two groups that
        # share no tracked region (warps of different CTAs, say) may use the same positions.
        # Bits 0..29 only: a Promela int is signed 32-bit, so bit 31 would overflow a literal.
        near: dict = {gi: set() for gi in need}
        for gs in self.region_groups.values():
            for gi in gs:
                near[gi] |= gs
        for gi in sorted(need):
            g = self.groups[gi]
            g.bit = gi  # has access bits
            taken = set()
            for gj in near[gi]:
                taken |= {self.groups[gj].wpos, self.groups[gj].rpos}
            free = (pos for pos in itertools.count() if pos not in taken)  # past MAX_BITS: TooManyGroups below
            if gi in wneed:
                g.wpos = next(free)
            if gi in rneed:
                g.rpos = next(free)
        nbits = 1 + max(pos for gi in need for pos in (self.groups[gi].wpos, self.groups[gi].rpos)
                        if pos is not None) if need else 0
        if nbits > MAX_BITS * MAX_WORDS:
            raise TooManyGroups(f"{len(need)} agents access shared buffers, {nbits} access bits needed "
                                f"(a write or a read of an agent, shared by agents with no buffer in common); "
                                f"at most {MAX_BITS * MAX_WORDS} are modeled")
        # Bit masks are declared just wide enough for every position in use (`unsigned x : w`
        # packs them in the state vector when w is small). Position p is bit p % 30 of word
        # p // 30; a region has as many words as its agents' highest position needs.
        self.width = {r: max(min(nbits, MAX_BITS), 1) for r in self.tracked_ids}
        self.region_words = {}
        for r in self.tracked_ids:
            top = max((pos for gi in self.region_groups.get(r, ()) for pos in
                       (self.groups[gi].wpos, self.groups[gi].rpos) if pos is not None), default=0)
            self.region_words[r] = top // MAX_BITS + 1
        # Per-thread partition views of a tracked buffer: accesses through one partition are
        # recorded apart (`ap<j>_r`, the rest in `an_r`) so that another warp's accesses through
        # the same partition, which touch other elements, are not taken for conflicts.
        self.parts: dict = {}  # region -> [partition keys]
        for p in k.processes:
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, (ir.Access, ir.CpAsyncCopy)) and op.part and op.region.index in self.tracked_ids:
                        keys = self.parts.setdefault(op.region.index, [])
                        if op.part not in keys:
                            keys.append(op.part)
        # Visibility per partition record: `c<g>_<r>p<j>` holds the agents whose latest access to
        # `r` *through partition j* is ordered before the holder (the region-wide `c<g>_<r>` covers
        # their latest access anywhere). A later access through another record must not make an
        # earlier, already ordered access through partition j look unordered again.
        self.vis_keys: list = sorted(self.tracked_ids)
        for r in sorted(self.parts):
            self.vis_keys += [self.part_key(r, j) for j in range(len(self.parts[r]))]
        # Holders of visibility bits, per tracked region.
        self.named = sorted({(p.cta, op.barrier_id) for p in k.processes for v in p.variants for op in ir.walk(v)
                             if isinstance(op, ir.NamedBarrier)})
        self.named_threads = {}
        for p in k.processes:
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, ir.NamedBarrier):
                        self.named_threads.setdefault((p.cta, op.barrier_id), set()).add(op.threads)
        self.clusters = sorted({p.cta // k.cluster_size for p in k.processes})
        # Clusters whose warps use the cluster barrier: only they need its visibility holders and
        # its completion at warp exit (elsewhere `kn` never counts an arrival).
        self.cluster_barriers = sorted({p.cta // k.cluster_size for p in k.processes for v in p.variants
                                        for op in ir.walk(v) if isinstance(op, (ir.ClusterArrive, ir.ClusterWait))})
        self.flag_ids = [f.index for f in k.flags]
        self.warps_per_cta = {}
        for p in k.processes:
            self.warps_per_cta[p.cta] = self.warps_per_cta.get(p.cta, 0) + 1
        self.warps_per_cluster = {}
        for p in k.processes:
            cl = p.cta // k.cluster_size
            self.warps_per_cluster[cl] = self.warps_per_cluster.get(cl, 0) + 1
        self.flag_readers = {}
        self.flag_writers = {}
        for p in k.processes:
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, ir.FlagWait):
                        self.flag_readers.setdefault(op.flag.index, set()).add(p.cta)
                    elif isinstance(op, ir.FlagUpdate):
                        self.flag_writers.setdefault(op.flag.index, set()).add(p.cta)
        self.remote_arrived = {op.bar.index for p in k.processes for v in p.variants for op in ir.walk(v)
                               if isinstance(op, ir.MbArrive) and op.bar.cta != p.cta}
        self._plan_warpgroups()
        # TMA slots: (proc, bar, regions written, tx) in flight counters.
        self.tma_slots = {}
        for pi, p in enumerate(k.processes):
            for v in p.variants:
                for op in ir.walk(v):
                    if isinstance(op, ir.TmaLoad):
                        self.tma_slots.setdefault(self.tma_slot_key(pi, op), len(self.tma_slots))

    def _plan_warpgroups(self):
        """A wgmma is one operation of the whole warpgroup: it starts once its four warps have
        issued it, and a `wait_group` that retires a group in one warp retires the other warps'
        share of it (their operand reads included). `wg_peers[pi]`: the other processes of pi's
        warpgroup that issue wgmma reads (a warp left out as identical to its siblings is none).
        `wg_reads`: (process, tracked region) pairs whose latest wgmma read keeps the group it
        belongs to (`lr<pi>_<r>`), so that a peer's wait retires only reads of the groups it waits
        for."""
        members: dict = {}
        reads: dict = {}
        for pi, p in enumerate(self.k.processes):
            regions = {op.region.index for v in p.variants for op in ir.walk(v)
                       if isinstance(op, ir.AsyncRead) and op.kind == "wgmma"}
            if regions:
                members.setdefault((p.cta, p.warp // 4), []).append(pi)
                reads[pi] = regions & self.tracked_ids
        self.wg_peers = {pi: [q for q in ms if q != pi] for ms in members.values() if len(ms) > 1 for pi in ms}
        self.wg_reads = {(pi, r) for pi in self.wg_peers for r in reads[pi]}

    def wg_wait_stmts(self, pi: int, op: ir.AsyncReadWait) -> list:
        """A `wait_group(n)` in a warp with warpgroup peers returns once the groups it retires (all
        but the newest n of the `wgc` groups the warp committed) are done, so once every peer has
        committed them too (or exited). A peer's read of a region it retires is then ordered
        before the waiting lanes as well, when that read belongs to one of those groups (`lr`): a
        peer may already have read the region again in a later group."""
        done = f"(wgc{pi} - {op.pending})"
        stmts = ["(" + " && ".join(f"(wgc{q} >= {done} || wgx{q})" for q in self.wg_peers[pi]) + ")"]
        regions = sorted({c.region.index for c in op.done_reads if c.region.index in self.tracked_ids})
        for q in self.wg_peers[pi]:
            for r in regions:
                if (q, r) not in self.wg_reads:
                    continue
                bits = [b for g in self.lane_groups(pi, op.lanes or 1)
                        for b in self.set_bits(lambda k: self.cov(g, k), r, self.R(self.ar_group[q]))]
                stmts.append(f"if :: (lr{q}_{r} < {done}) -> {'; '.join(bits)} :: else -> skip fi")
        return stmts

    @staticmethod
    def tma_slot_key(pi: int, op: ir.TmaLoad) -> tuple:
        return (pi, op.bar.index, tuple(r.index for r in op.regions()), op.tx)

    def _classes(self, mask: int, p: ir.Process):
        return [i for i in range(len(p.lane_classes)) if mask >> i & 1]

    # ------------------------------------------------------------------ variable names
    def W(self, g: Group) -> int:
        return 1 << g.wpos if g.wpos is not None else 0  # 0: the group writes no tracked region

    def R(self, g: Group) -> int:
        return 1 << g.rpos if g.rpos is not None else 0  # 0: the group reads no tracked region

    @staticmethod
    def cov(g: Group, r: int) -> str:
        return f"c{g.index}_{r}"

    # ------------------------------------------------------------------ words of access bits
    def wkeys(self, key) -> list:
        """The variable keys of a visibility key, one per word of its region's bits."""
        return [wkey(key, w) for w in range(self.region_words.get(self.region_of(key), 1))]

    def set_bits(self, name, key, bits: int) -> list:
        """`x |= bits` for the variables `name(word key)` of `key`, in the words `bits` touch."""
        return [f"{name(wkey(key, w))} = {name(wkey(key, w))} | {part}" for w, part in split_words(bits)]

    def unordered(self, var, key, g: Group, mask: Optional[int] = None, own: Optional[int] = None) -> str:
        """The bits of `var` (of `mask`, not `own`) that lane class `g` has not seen, over the
        words of `key`, as one expression (0 when everything is ordered before `g`)."""
        terms = []
        for w, k in enumerate(self.wkeys(key)):
            m = None if mask is None else word_part(mask, w)
            if w and m == 0:
                continue
            term = [var(k)] + ([str(m)] if m is not None else []) + \
                ([f"~{word_part(own, w)}"] if own is not None else []) + [f"~{self.cov(g, k)}"]
            terms.append("(" + " & ".join(term) + ")")
        return terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"

    def holders(self, r: int) -> list:
        hs = [self.cov(g, r) for g in self.groups if g.lane_class is not None]
        hs += [f"br{b}_{r}" for b in self.waited]
        hs += [f"bd{b}_{r}" for b in self.waited]
        hs += [f"na{i}_{r}" for i in range(len(self.named))]
        hs += [f"nd{i}_{r}" for i in range(len(self.named))]
        hs += [f"ka{c}_{r}" for c in self.cluster_barriers] + [f"kd{c}_{r}" for c in self.cluster_barriers]
        hs += [f"fr{f}_{r}" for f in self.flag_ids]
        return hs

    def lane_groups(self, pi: int, mask: int) -> list:
        p = self.k.processes[pi]
        return [self.group_of[(pi, ci)] for ci in self._classes(mask, p)]

    # ------------------------------------------------------------------ building blocks
    def clear_bit(self, key, bits: int, keep: Optional[Group] = None) -> list:
        """Clear `bits` from every holder of `key`, except the lane class `keep` (the accessor)."""
        out = []
        for w, part in split_words(bits):
            k = wkey(key, w)
            mine = self.cov(keep, k) if keep is not None else None
            out += [f"{h} = {h} & ~{part}" for h in self.holders(k) if h != mine]
        return out

    def release_into(self, dest_prefix: str, pi: int, mask: int, reads_from_whole_warp: bool) -> list:
        """`dest |= cov` of the releasing lanes, for every tracked region."""
        out = []
        p = self.k.processes[pi]
        groups = self.lane_groups(pi, mask)
        all_groups = [self.group_of[(pi, ci)] for ci in range(len(p.lane_classes))]
        for key in self.vis_keys:
            read_mask = self._read_mask(self.region_of(key))
            for w, r in enumerate(self.wkeys(key)):
                for g in groups:
                    out.append(f"{dest_prefix}_{r} = {dest_prefix}_{r} | {self.cov(g, r)}")
                if reads_from_whole_warp:
                    for g in all_groups:
                        if g not in groups:
                            out.append(f"{dest_prefix}_{r} = {dest_prefix}_{r} | "
                                       f"({self.cov(g, r)} & {word_part(read_mask, w)})")
        return out

    def acquire_from(self, src_prefix: str, pi: int, mask: int) -> list:
        out = []
        for key in self.vis_keys:
            for r in self.wkeys(key):
                for g in self.lane_groups(pi, mask):
                    out.append(f"{self.cov(g, r)} = {self.cov(g, r)} | {src_prefix}_{r}")
        return out

    def _read_mask(self, r: int) -> int:
        """The read bits of region `r` (bit positions are per region: see `_plan`)."""
        m = 0
        for gi in self.region_groups.get(r, ()):
            m |= self.R(self.groups[gi])
        return m

    def _write_mask(self, r: int) -> int:
        m = 0
        for gi in self.region_groups.get(r, ()):
            m |= self.W(self.groups[gi])
        return m

    def own_bits(self, pi: int, r: int) -> int:
        m = 0
        for gi in self.region_groups.get(r, ()):
            g = self.groups[gi]
            if g.process == pi and g.lane_class is not None:
                m |= self.W(g) | self.R(g)
        return m

    def record(self, r: int, bits: int, part: Optional[str] = None) -> list:
        """`a_r |= bits` (every access ever made), plus the per-partition record where `r` has
        partition views."""
        out = self.set_bits(lambda k: f"a_{k}", r, bits)
        if r in self.parts:
            j = self.parts[r].index(part) if part in self.parts[r] else None
            out += self.set_bits(lambda k: f"ap{j}_{k}" if j is not None else f"an_{k}", r, bits)
        return out

    @staticmethod
    def part_key(r: int, j: int) -> str:
        return f"{r}p{j}"

    @staticmethod
    def region_of(key) -> int:
        """The tracked region a visibility key belongs to (a region, or one of its partitions)."""
        return key if isinstance(key, int) else int(re.split("[pw]", str(key))[0])

    def part_index(self, r: int, part: Optional[str]) -> Optional[int]:
        return self.parts[r].index(part) if r in self.parts and part in self.parts[r] else None

    def touch_part(self, r: int, part: Optional[str], bit: int, g: Optional[Group] = None) -> list:
        """After an access to `r` through partition `part` by the agent owning `bit`: that access is
        now the agent's latest through the partition, seen by nobody yet but the accessing lanes."""
        j = self.part_index(r, part)
        if j is None:
            return []
        key = self.part_key(r, j)
        out = self.clear_bit(key, bit, keep=g)
        if g is not None:
            out += self.set_bits(lambda k: self.cov(g, k), key, bit)
        return out

    def unseen(self, r: int, part: Optional[str], pi: int, g: Group, mask: int) -> str:
        """The accesses (bits of `mask`) that an access to `r` through `part` by lane class `g` of
        process `pi` may conflict with and that are not ordered before `g`: all of them, except
        those of other warps through the same per-thread partition (other elements). The warp's
        own cp.async copies through that partition wrote the very elements it touches. Each
        partition record is checked against the visibility of the accesses made through it."""
        own = self.own_bits(pi, r)
        if r not in self.parts:
            return self.unordered(lambda k: f"a_{k}", r, g, mask, own)
        j = self.part_index(r, part)
        # The partition records of word w of `r` are `an_<r>w<w>` / `ap<i>_<r>w<w>`; their
        # visibility lives in the holders of the partition key's word w.
        terms = [self.unordered(lambda k: f"an_{k}", r, g, mask, own)]
        for i in range(len(self.parts[r])):
            if i != j:
                terms.append(self.unordered(lambda k, i=i: f"ap{i}_{r}" + k[len(self.part_key(r, i)):],
                                            self.part_key(r, i), g, mask, own))
        cg = self.cp_group.get(pi)
        if j is not None and cg is not None and cg.index in self.region_groups.get(r, ()) and mask & self.W(cg):
            terms.append(self.unordered(lambda k: f"ap{j}_{r}" + k[len(self.part_key(r, j)):],
                                        self.part_key(r, j), g, self.W(cg)))
        return "(" + " | ".join(terms) + ")"

    def async_reads_seen(self, r: int, pi: int, g: Group) -> list:
        """Before a write of `r`: every asynchronous read of it (`ar_r`: wgmma operands, tcgen05.ld)
        by another agent must have been retired and ordered before the writing lanes. A separate
        assertion so that the finding can say which wait is missing."""
        if r not in self.async_read_kinds or r not in self.tracked_ids:
            return []
        # The warp's own asynchronous reads count too: its lanes see them only once retired.
        return [f"assert({self.unordered(lambda k: f'ar_{k}', r, g, own=self.own_bits(pi, r))} == 0)"]

    def complete_phase(self, b: int) -> str:
        e = f"mb_e[{self.init_slot[b]}]" if b in self.init_slot else self.expected.get(b, 1)
        moves = []
        for key in self.vis_keys if b in self.waited else ():
            for r in self.wkeys(key):
                moves += [f"bd{b}_{r} = br{b}_{r}", f"br{b}_{r} = 0"]
        body = "; ".join([f"mb_ph[{b}] = (mb_ph[{b}] + 1) % 4", f"mb_p[{b}] = {e}", f"mb_t[{b}] = 0"] + moves)
        return f"if :: (mb_p[{b}] == 0 && mb_t[{b}] == 0) -> {body} :: else -> skip fi"

    def dstep(self, stmts: list) -> str:
        """One op's effect (its statements; only the first may be a blocking guard), as a
        placeholder that `pack_effects` replaces once the whole body is known."""
        stmts = list(stmts) or ["skip"]
        self.effects.append(stmts)
        self.effect_sizes.append(_statements(stmts))
        self.statements += self.effect_sizes[-1]
        if self.statement_cap is not None and self.statements > self.statement_cap:
            raise OverStatementCap(f"the model has more than {self.statement_cap} Promela statements")
        if self.statements > MAX_MODEL_STATEMENTS:
            raise ModelTooLarge(f"the unrolled model has more than {MAX_MODEL_STATEMENTS} Promela statements; "
                                f"pin a smaller loop bound or fewer stages")
        return f"{EFFECT}{len(self.effects) - 1}{EFFECT}"

    def pack_effects(self):
        """Replace every effect placeholder with d_steps. Consecutive op lines of one sequence
        whose effects cannot block (past the first line) share one d_step that spans their lines:
        inside a warp's atomic body they run back to back anyway, and each statement keeps its own
        line, so the trail still maps every step to its op. Fewer, larger d_steps matter because
        `spin -a` spends time quadratic in the statements of a process outside d_steps and counts
        every d_step against one table for the whole model (MAX_DSTEPS); past that table the same
        packing falls back to atomic blocks."""
        out = []
        i = 0
        while i < len(self.lines):
            run = [i]
            if self._sole_effect(self.lines[i][0]) is not None:
                indent = _indent(self.lines[i][0])
                while run[-1] + 1 < len(self.lines):
                    text = self.lines[run[-1] + 1][0]
                    e = self._sole_effect(text)
                    if e is None or _indent(text) != indent or e >= 0 and _blocking(self.effects[e][0]):
                        break
                    run.append(run[-1] + 1)
                out += self._pack_run(run, indent)
            else:
                text, info = self.lines[i]
                out.append((_replace_effects(text, lambda e: self._chunked(e)), info))
            i = run[-1] + 1
        self.lines = out

    @staticmethod
    def _sole_effect(text: str) -> Optional[int]:
        """The effect of a line that is nothing but one effect placeholder (-1 for `skip`)."""
        body = text.strip()
        if body == "skip":
            return -1
        if len(body) > 2 and body[0] == EFFECT and body[-1] == EFFECT and body.count(EFFECT) == 2:
            return int(body[1:-1])
        return None

    def _size(self, e: int) -> int:
        return 1 if e < 0 else self.effect_sizes[e]

    def _pack_run(self, run: list, indent: str) -> list:
        """The lines of `run` as d_steps of at most MAX_DSTEP_STATEMENTS statements that start and
        end at line boundaries (a single op above the limit is split on its own line)."""
        chunks: list = []  # [[(line index, effect), ...]]
        size = 0
        for li in run:
            e = self._sole_effect(self.lines[li][0])
            n = self._size(e)
            if not chunks or size + n > MAX_DSTEP_STATEMENTS:
                chunks.append([])
                size = 0
            chunks[-1].append((li, e))
            size += n
        out = []
        for chunk in chunks:
            if len(chunk) == 1:
                li, e = chunk[0]
                out.append((indent + ("skip" if e < 0 else self._chunked(e)), self.lines[li][1]))
                continue
            kw = self._block_keyword(sum(self._size(e) for _, e in chunk))
            for j, (li, e) in enumerate(chunk):
                text = "; ".join(self.effects[e]) if e >= 0 else "skip"
                text = (f"{kw} {{ " + text if j == 0 else text) + (" }" if j == len(chunk) - 1 else ";")
                out.append((indent + text, self.lines[li][1]))
        return out

    def _chunked(self, e: int) -> str:
        """One op's effect on one line, split where it is over SPIN's d_step size; inside the
        process's atomic body the pieces still run back to back (only the first can block)."""
        stmts = self.effects[e]
        if self.effect_sizes[e] <= MAX_DSTEP_STATEMENTS:
            return f"{self._block_keyword(self.effect_sizes[e])} {{ " + "; ".join(stmts) + " }"
        chunks, cur, size = [], [], 0
        for st in stmts:
            n = _statements([st])
            if cur and size + n > MAX_DSTEP_STATEMENTS:
                chunks.append(cur)
                cur, size = [], 0
            cur.append(st)
            size += n
        chunks.append(cur)
        return "; ".join(f"{self._block_keyword(_statements(c))} {{ " + "; ".join(c) + " }" for c in chunks)

    def _block_keyword(self, statements: int) -> str:
        """d_step while SPIN's d_step table has room (MAX_DSTEPS); atomic gives the same semantics
        (no interleaving, a leading guard blocks), only slower."""
        if self.dsteps < MAX_DSTEPS and statements <= MAX_DSTEP_STATEMENTS:
            self.dsteps += 1
            return "d_step"
        return "atomic"

    def emit(self, text: str, info: Optional[LineInfo]):
        self.lines.append((text, info))
        if len(self.lines) > MAX_MODEL_LINES:  # stop at once rather than build a model that is refused
            raise ModelTooLarge(f"the unrolled model has more than {MAX_MODEL_LINES} Promela lines; "
                                f"pin a smaller loop bound or fewer stages")

    # ------------------------------------------------------------------ ops
    def lower_op(self, pi: int, op, indent: str):
        p = self.k.processes[pi]
        role = p.role
        k = self.k

        def info(what, kind, bar=None, region=None):
            return LineInfo(op.span, role, what, kind, bar, region)

        if isinstance(op, ir.MbInit):
            b = op.bar.index
            # Initialising it again is undefined unless nothing has touched it since an identical
            # init (every thread initialising every barrier before the CTA barrier, as cuDNN's
            # frost kernels do): same count, no arrival, no transaction, no phase completed, so
            # the second init writes the bytes that are already there (P8).
            untouched = f"(mb_p[{b}] == {op.count} && mb_t[{b}] == 0 && mb_ph[{b}] == 0)"
            stmts = [f"assert(mb_in[{b}] == 0 || {untouched})", f"mb_in[{b}] = (mb_in[{b}] > 0 -> mb_in[{b}] : 1)",
                     f"mb_p[{b}] = {op.count}", f"mb_t[{b}] = 0", f"mb_ph[{b}] = 0"]
            if b in self.init_slot:
                stmts.append(f"mb_e[{self.init_slot[b]}] = {op.count}")
            self.inited_by.setdefault(pi, set()).add(b)
            self.emit(indent + self.dstep(stmts), info(f"initialises {op.bar.name} with {op.count} arrivals", "init", b))
        elif isinstance(op, ir.MbInitFence):
            # fence.mbarrier_init orders this thread's earlier inits for the cluster: 2 = fenced.
            mine = sorted(self.inited_by.get(pi, ()))
            stmts = [f"if :: (mb_in[{b}] == 1) -> mb_in[{b}] = 2 :: else -> skip fi" for b in mine]
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"), info("fences the barrier initialisation", "fence"))
        elif isinstance(op, ir.MbArrive):
            b = op.bar.index
            stmts = [f"assert(mb_in[{b}])"]
            if op.bar.cta != p.cta:
                stmts.append(f"assert(dead[{op.bar.cta}] == 0)")
                # A peer may only arrive once the owner fenced the init for the cluster.
                stmts.append(f"assert(mb_in[{b}] >= 2)")
            if op.tx:
                stmts.append(f"mb_t[{b}] = mb_t[{b}] + {op.tx}")
            stmts.append(f"assert(mb_p[{b}] >= {op.count})")
            stmts.append(f"mb_p[{b}] = mb_p[{b}] - {op.count}")
            publishes = op.release and not (op.remote and op.scope == "cta" and op.bar.cta != p.cta)
            if op.release and not publishes:
                self.narrow_sites.append((op.span, pi, f"remote arrive on {op.bar.name} at CTA scope does not "
                                                   f"release this CTA's writes to the peer"))
                self.narrow_reach[(op.span, pi)] = op.bar.cta
            if publishes and b in self.waited:
                stmts += self.release_into(f"br{b}", pi, op.lanes, reads_from_whole_warp=not k.strict)
                cg = self.cp_group.get(pi)
                for c in op.done_copies if cg is not None else ():
                    # cp.async.mbarrier.arrive.noinc: the copies have landed when the arrive fires;
                    # the waiters (not the issuing lanes) see them.
                    r = c.region.index
                    if r not in self.tracked_ids:
                        continue
                    j = self.part_index(r, c.part)
                    for key in [r] + ([self.part_key(r, j)] if j is not None else []):
                        stmts += self.set_bits(lambda k: f"br{b}_{k}", key, self.W(cg))
            stmts.append(self.complete_phase(b))
            what = f"arrives on {op.bar.name} ({op.count} arrival{'s' if op.count != 1 else ''}" + (
                f", expects {op.tx} tx" if op.tx else "") + (
                ", relaxed: it orders none of the warp's earlier accesses" if not op.release and not op.cp_async
                else "") + ")"
            self.emit(indent + self.dstep(stmts), info(what, "arrive", b))
        elif isinstance(op, ir.MbExpectTx):
            b = op.bar.index
            stmts = [f"assert(mb_in[{b}])", f"mb_t[{b}] = mb_t[{b}] + {op.tx}"]
            self.emit(indent + self.dstep(stmts), info(f"expects {op.tx} tx on {op.bar.name}", "expect_tx", b))
        elif isinstance(op, ir.MbWait):
            b = op.bar.index
            stmts = [f"(mb_ph[{b}] % 2 != {op.parity})", f"assert(mb_in[{b}])"]
            if k.strict and b in self.remote_arrived:
                # Strict: the wait's default acquire is CTA-scoped; data a peer CTA published needs a
                # cluster-scope acquire (a fence_acq_rel_cluster() after the wait grants it).
                self.pending_acquire[pi] = (b, op)
                self.narrow_sites.append((op.span, pi, f"mbarrier_wait on {op.bar.name} acquires at CTA scope only "
                                                   f"(strict mode) but a peer CTA arrives on it"))
            else:
                stmts += self.acquire_from(f"bd{b}", pi, op.lanes)
            self.emit(indent + self.dstep(stmts), info(f"waits on {op.bar.name}, parity {op.parity}", "wait", b))
        elif isinstance(op, ir.TmaLoad):
            b = op.bar.index
            slot = self.tma_slots[self.tma_slot_key(pi, op)]
            stmts = [f"assert(tq{slot} == 0)", f"tq{slot} = 1"]
            for r in (x.index for x in op.regions() if x.index in self.tracked_ids):
                tg = self.tma_group[pi]
                issuer = self.lane_groups(pi, op.lanes)[0]
                stmts += self.async_reads_seen(r, pi, issuer)
                stmts.append(f"assert({self.unordered(lambda k: f'a_{k}', r, issuer, self._read_mask(r))} == 0)")
                stmts += self.record(r, self.W(tg))
                stmts += self.clear_bit(r, self.W(tg))
            name = op.region.name if op.region else "shared memory"
            self.emit(indent + self.dstep(stmts),
                      info(f"issues {op.what}{f' ({op.copies} copies)' if op.copies > 1 else ''} into {name} "
                           f"completing {op.tx} tx on {op.bar.name}", "tma_load", b,
                           op.region.index if op.region else None))
        elif isinstance(op, ir.TmaStore):
            stmts = []
            if op.region is not None and op.region.index in self.tracked_ids:
                r = op.region.index
                issuer = self.lane_groups(pi, op.lanes)[0]
                bg = self.bulk_group[pi]
                stmts.append(f"assert({self.unordered(lambda k: f'a_{k}', r, issuer, self._write_mask(r))} == 0)")
                stmts += [f"assert(u_{k} == 0)" for k in self.wkeys(r)]
                stmts += self.record(r, self.R(bg))
                stmts += self.clear_bit(r, self.R(bg))
            if op.dest is not None and op.dest.index in self.tracked_ids:
                d, bg = op.dest.index, self.bulk_group[pi]
                stmts += self.record(d, self.W(bg))
                stmts += self.clear_bit(d, self.W(bg))
            name = op.region.name if op.region else "shared memory"
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"),
                      info(f"issues a TMA store reading {name}", "tma_store", None,
                           op.region.index if op.region else None))
        elif isinstance(op, ir.BulkCommit):
            self.emit(indent + "skip", info("commits the bulk async group", "bulk_commit"))
        elif isinstance(op, ir.BulkWait):
            stmts = []
            bg = self.bulk_group.get(pi)
            for st in op.done_stores:
                if bg is not None and st.region is not None and st.region.index in self.tracked_ids:
                    for g in self.lane_groups(pi, (1 << len(p.lane_classes)) - 1):
                        stmts += self.set_bits(lambda k: self.cov(g, k), st.region.index, self.R(bg))
                if bg is not None and not op.read_only and st.dest is not None and st.dest.index in self.tracked_ids:
                    # The global write is complete but only visible to generic-proxy readers after
                    # fence_proxy("async.global").
                    self.pending_global.setdefault(pi, set()).add(st.dest.index)
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"),
                      info(f"waits until at most {op.pending} bulk groups are pending", "bulk_wait"))
        elif isinstance(op, ir.CpAsyncCopy):
            r = op.region.index
            stmts = []
            if r in self.tracked_ids:
                cg = self.cp_group[pi]
                for g in self.lane_groups(pi, op.lanes):
                    # The issuing lanes must have seen every read of the elements they overwrite.
                    stmts += self.async_reads_seen(r, pi, g)
                    stmts.append(f"assert({self.unseen(r, op.part, pi, g, self._read_mask(r))} == 0)")
                stmts += self.record(r, self.W(cg), op.part)
                stmts += self.clear_bit(r, self.W(cg))
                stmts += self.touch_part(r, op.part, self.W(cg))
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"),
                      info(f"issues a cp.async copy into {op.region.name}", "cp_async", None, r))
        elif isinstance(op, ir.CpAsyncCommit):
            self.emit(indent + "skip", info("commits the cp.async group", "cp_async_commit"))
        elif isinstance(op, ir.CpAsyncWait):
            stmts = []
            cg = self.cp_group.get(pi)
            for c in op.done_copies:
                r = c.region.index
                if cg is None or r not in self.tracked_ids:
                    continue
                # cp.async.wait_group makes the copies visible to the issuing threads only; other
                # threads need a barrier after it (which releases these covs).
                j = self.part_index(r, c.part)
                for g in self.lane_groups(pi, c.lanes & op.lanes or c.lanes):
                    stmts += self.set_bits(lambda k: self.cov(g, k), r, self.W(cg))
                    if j is not None:
                        stmts += self.set_bits(lambda k: self.cov(g, k), self.part_key(r, j), self.W(cg))
            self.emit(indent + (self.dstep(sorted(set(stmts))) if stmts else "skip"),
                      info(f"waits until at most {op.pending} cp.async groups are pending", "cp_async_wait"))
        elif isinstance(op, ir.AsyncRead):
            r = op.region.index
            stmts = []
            unit = {"wgmma": "a warpgroup MMA (wgmma)", "umma": "a tcgen05 MMA"}.get(op.kind, "a tcgen05.ld")
            if r in self.tracked_ids:
                ag = self.ar_group[pi]
                own = self.own_bits(pi, r)
                for g in self.lane_groups(pi, op.lanes):
                    # The operand must be visible to the issuing lanes (read-after-write).
                    stmts.append(f"assert({self.unordered(lambda k: f'a_{k}', r, g, self._write_mask(r), own)} == 0)")
                # The read goes on in the background: nobody (not even the issuing lanes) has it
                # ordered before them until the retiring wait.
                stmts += self.record(r, self.R(ag))
                stmts += self.set_bits(lambda k: f"ar_{k}", r, self.R(ag))
                stmts += self.clear_bit(r, self.R(ag))
                if (pi, r) in self.wg_reads and op.kind == "wgmma":
                    stmts.append(f"lr{pi}_{r} = wgc{pi}")  # the group this read belongs to
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"),
                      info(f"issues {unit} reading {op.region.name}", "async_read", None, r))
        elif isinstance(op, ir.AsyncReadCommit):
            counted = op.kind == "wgmma" and pi in self.wg_peers
            self.emit(indent + (self.dstep([f"wgc{pi} = wgc{pi} + 1"]) if counted else "skip"),
                      info("commits the warpgroup MMA group", "async_read_commit"))
        elif isinstance(op, ir.AsyncReadWait):
            stmts = self.wg_wait_stmts(pi, op) if op.kind == "wgmma" and pi in self.wg_peers else []
            ag = self.ar_group.get(pi)
            for c in op.done_reads:
                r = c.region.index
                if ag is None or r not in self.tracked_ids:
                    continue
                # The wait makes the reads complete for the waiting lanes; a release after it
                # (arrive, barrier) carries that to the writer.
                for g in self.lane_groups(pi, op.lanes or c.lanes):
                    stmts += self.set_bits(lambda k: self.cov(g, k), r, self.R(ag))
            what = (f"waits until at most {op.pending} warpgroup MMA groups are pending" if op.kind == "wgmma"
                    else "commits its tcgen05 MMAs (the arrive follows once they are done)" if op.kind == "umma"
                    else "waits for its tcgen05.ld loads (fence_view_async_tmem_load)")
            # The peers' guard first (`dstep`: only the first statement may block); the own
            # lanes' bits in a fixed order.
            guard = stmts[:1] if op.kind == "wgmma" and pi in self.wg_peers else []
            stmts = guard + sorted(set(stmts[len(guard):]))
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"), info(what, "async_read_wait"))
        elif isinstance(op, ir.Access):
            r = op.region.index
            verb = "writes" if op.write else "reads"
            if r not in self.tracked_ids:
                # Not a handoff buffer: kept for the line table, left out of traces.
                self.emit(indent + "skip", info(f"{verb} {op.region.name}", "untracked", region=r))
                return
            stmts = []
            if op.region.space == "smem" and op.region.cta != p.cta:
                stmts.append(f"assert(dead[{op.region.cta}] == 0)")
            for g in self.lane_groups(pi, op.lanes):
                if op.write:
                    stmts += self.async_reads_seen(r, pi, g)
                    stmts.append(f"assert({self.unseen(r, op.part, pi, g, self._read_mask(r))} == 0)")
                    stmts += self.record(r, self.W(g), op.part)
                    stmts += self.clear_bit(r, self.W(g), keep=g)
                    stmts += self.set_bits(lambda k: self.cov(g, k), r, self.W(g))
                    stmts += self.touch_part(r, op.part, self.W(g), g)
                    if r in self.async_read_regions:
                        stmts += self.set_bits(lambda k: f"u_{k}", r, self.W(g))
                else:
                    stmts.append(f"assert({self.unseen(r, op.part, pi, g, self._write_mask(r))} == 0)")
                    stmts += self.record(r, self.R(g), op.part)
                    stmts += self.clear_bit(r, self.R(g), keep=g)
                    stmts += self.set_bits(lambda k: self.cov(g, k), r, self.R(g))
                    stmts += self.touch_part(r, op.part, self.R(g), g)
            if op.what == "dealloc":
                self.emit(indent + self.dstep(stmts), info(f"deallocates {op.region.name}", "dealloc", region=r))
                return
            self.emit(indent + self.dstep(stmts), info(f"{verb} {op.region.name}", "store" if op.write else "load",
                                                       region=r))
        elif isinstance(op, ir.Fence):
            stmts = []
            pending = self.pending_acquire.pop(pi, None)
            if op.kind == "acq_rel" and pending is not None and ir.scope_rank(op.scope) >= ir.scope_rank("cluster"):
                b, wait = pending
                stmts += self.acquire_from(f"bd{b}", pi, wait.lanes)
                self.narrow_sites = [s for s in self.narrow_sites if (s[0], s[1]) != (wait.span, pi)]
            if op.kind == "proxy_async_global":
                bg = self.bulk_group.get(pi)
                for d in sorted(self.pending_global.pop(pi, set())):
                    for g in self.lane_groups(pi, (1 << len(p.lane_classes)) - 1):
                        stmts += self.set_bits(lambda k: self.cov(g, k), d, self.W(bg))
            if op.kind == "proxy_async_shared":
                for r in self.tracked_ids & self.async_read_regions:
                    for g in self.lane_groups(pi, op.lanes or 1):
                        for w, k in enumerate(self.wkeys(r)):
                            stmts.append(f"u_{k} = u_{k} & ~({self.cov(g, k)} & {word_part(self._write_mask(r), w)})")
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"),
                      info({"proxy_async_shared": "fences generic writes for the async proxy",
                            "proxy_async_global": "fences global writes for the async proxy",
                            "acq_rel": f"fences (acq_rel, {op.scope} scope)"}.get(op.kind, "fence"), "fence"))
        elif isinstance(op, ir.NamedBarrier):
            i = self.named.index((p.cta, op.barrier_id))
            total = f"{self.warps_per_cta[p.cta] * 32} - 32 * ex[{p.cta}]" if op.threads is None else str(op.threads)
            stmts = ["sg = ng[%d]" % i] if op.wait else []
            stmts.append(f"nn[{i}] = nn[{i}] + {op.arriving}")
            stmts += self.release_into(f"na{i}", pi, (1 << len(p.lane_classes)) - 1, False)
            stmts.append(self.complete_named(i, total))
            shown = f"`{op.id_text}`" if op.id_text else str(op.barrier_id)
            label = "sync_threads" if op.barrier_id == 0 and op.threads is None else (
                f"named barrier {shown}" + (f" ({op.threads} threads)" if op.threads else ""))
            self.emit(indent + self.dstep(stmts),
                      info(f"{'arrives at' if not op.wait else 'arrives and waits at'} {label}", "named_arrive"))
            if op.wait:
                wstmts = [f"(ng[{i}] != sg)"] + self.acquire_from(f"nd{i}", pi, (1 << len(p.lane_classes)) - 1)
                self.emit(indent + self.dstep(wstmts), info(f"waits at {label}", "named_wait"))
        elif isinstance(op, ir.SyncWarp):
            stmts = []
            gs = [self.group_of[(pi, ci)] for ci in range(len(p.lane_classes))]
            if len(gs) > 1:
                for r in (k for key in self.vis_keys for k in self.wkeys(key)):
                    # Every lane class sees what any of them saw: the union into the first, then
                    # copied (no temporary: a leftover value would tell otherwise equal states apart).
                    first = self.cov(gs[0], r)
                    stmts.append(f"{first} = " + " | ".join(self.cov(g, r) for g in gs))
                    stmts += [f"{self.cov(g, r)} = {first}" for g in gs[1:]]
            self.emit(indent + (self.dstep(stmts) if stmts else "skip"), info("synchronises the warp (sync_warp)", "sync_warp"))
        elif isinstance(op, ir.ClusterArrive):
            c = p.cta // k.cluster_size
            stmts = [f"cg = kg[{c}]", f"kn[{c}] = kn[{c}] + 1"]
            if not op.relaxed:
                stmts += self.release_into(f"ka{c}", pi, (1 << len(p.lane_classes)) - 1, False)
            stmts.append(self.complete_cluster(c))
            self.emit(indent + self.dstep(stmts), info("arrives at the cluster barrier" + (" (relaxed)" if op.relaxed else ""),
                                                       "cluster_arrive"))
        elif isinstance(op, ir.ClusterWait):
            c = p.cta // k.cluster_size
            stmts = [f"(kg[{c}] != cg)"] + self.acquire_from(f"kd{c}", pi, (1 << len(p.lane_classes)) - 1)
            self.emit(indent + self.dstep(stmts), info("waits at the cluster barrier", "cluster_wait"))
        elif isinstance(op, ir.FlagUpdate):
            f = op.flag.index
            amount = op.value * op.arrivals if op.op == "add" else op.value
            # A flag no warp waits on (a histogram's counters): its value decides nothing, and
            # keeping it would number every order of the updates as its own state.
            stmts = ["skip"] if f not in self.flag_readers else \
                [f"fv[{f}] = fv[{f}] + {amount}" if op.op == "add" else f"fv[{f}] = {amount}"]
            if op.release_scope is not None:
                readers = self.flag_readers.get(f, set())
                need = max((ir.scope_rank(ir.scope_needed(p.cta, rc, k.cluster_size)) for rc in readers), default=0)
                if ir.scope_rank(op.release_scope) >= need:
                    stmts += self.release_into(f"fr{f}", pi, op.lanes, False)
                else:
                    self.narrow_sites.append((op.span, pi, f"release at {op.release_scope} scope does not reach the "
                                                       f"reading CTA (needs {ir.SCOPES[need]})"))
            self.emit(indent + self.dstep(stmts), info(f"updates flag {op.flag.name}", "flag_update"))
        elif isinstance(op, ir.FlagWait):
            f = op.flag.index
            stmts = [f"(fv[{f}] {op.cmp} {op.value})"]
            if op.acquire_scope is not None:
                writers = self.flag_writers.get(f, set())
                need = max((ir.scope_rank(ir.scope_needed(p.cta, wc, k.cluster_size)) for wc in writers), default=0)
                if ir.scope_rank(op.acquire_scope) >= need:
                    stmts += self.acquire_from(f"fr{f}", pi, op.lanes)
                else:
                    self.narrow_sites.append((op.span, pi, f"acquire at {op.acquire_scope} scope does not reach the "
                                                       f"writing CTA (needs {ir.SCOPES[need]})"))
            self.emit(indent + self.dstep(stmts), info(f"waits until flag {op.flag.name} {op.cmp} {op.value}", "flag_wait"))
        elif isinstance(op, ir.Choice):
            self.lower_choice(pi, op, indent)
        else:
            self.emit(indent + "skip", info(type(op).__name__, "other"))

    def lower_choice(self, pi: int, op: ir.Choice, indent: str):
        """A runtime branch. Inside an atomic sequence SPIN stores no states, so n branches in a
        row are walked as 2^n paths each time the warp runs through them. Branches stay inside
        the atomic sequence while the sequence has at most PATH_BUDGET paths; the branch that
        would exceed it ends the sequence, and each alternative and the code after it start a
        new one (P10): SPIN then stores a state at the branch point, and paths that reach the
        same state are merged instead of walked again. (Ending the sequence at every branch
        instead lets the other warps interleave at each one, which costs more than it saves
        where branches are many and short.)"""
        paths = self.choice_paths(op)
        if self.inlining or self.paths * paths <= PATH_BUDGET:
            if not self.inlining:
                self.paths *= paths
            self.lower_alternatives(pi, op, indent, inline=True)
            return
        self.close_atomic(indent + "};")
        self.lower_alternatives(pi, op, indent, inline=False)
        self.emit(indent + "atomic {", None)
        self.paths = 1

    def lower_alternatives(self, pi: int, op: ir.Choice, indent: str, inline: bool):
        """The `if` of a branch. A CTA-uniform condition (P14) reads and sets `uc[n]` (0 = not
        yet evaluated in this CTA, 1 = true, 2 = false), so every warp takes the side the first
        one took. A comparison of a uniform value with constants (`Choice.enum`) reads `ue[m]`,
        the value's index among the constants it is compared with, chosen once at launch."""
        role = self.k.processes[pi].role
        self.emit(indent + "if", LineInfo(op.span, role, "takes a runtime branch", "branch"))
        for side, alt in enumerate(op.alternatives):
            name = "`if`" if (side == 0) != op.swapped else "`else`"
            kind = "ctbranch" if op.compile_time == "unknown" else "branch"
            if op.enum is not None:
                holds = self.enum_guard(op.enum)
                guard = holds if side == 0 else f"!{holds}"
                what = f"takes the {name} side of a runtime branch (the same side in every warp of the CTA)"
            elif op.shared is None:
                guard, what = "true", f"takes the {name} side of a runtime branch"
            else:
                u, value, other = op.shared, side + 1, 2 - side
                guard = f"(uc[{u}] != {other}) -> uc[{u}] = {value}"
                what = f"takes the {name} side of a runtime branch (the same side in every warp of the CTA)"
            if op.follows:
                what = (f"follows the {name} side of the branch at line {op.follows[0]} (`{op.follows[1]}`), "
                        f"as every warp of the CTA does")
            if side in op.dead:
                guard = "false"  # a path no compiled kernel takes (ir.Choice.dead)
            if op.compile_time == "build":
                what = f"takes the {name} side of a compile-time condition (a choice of the build)"
            elif op.compile_time == "unknown":
                what = (f"takes the {name} side of a compile-time condition whose value is not known (the same "
                        f"side in every warp)")
            if inline:
                self.emit(indent + f":: {guard};", LineInfo(op.span, role, what, kind))
                saved, self.inlining = self.inlining, True
                self.lower_seq(pi, alt, indent + "   ")
                self.inlining = saved
            else:
                self.emit(indent + f":: atomic {{ {guard};", LineInfo(op.span, role, what, kind))
                self.paths = 1
                self.lower_seq(pi, alt, indent + "   ")
                self.close_atomic(indent + "   }")
        self.emit(indent + ("fi" if inline else "fi;"), None)

    def enum_guard(self, enum: tuple) -> str:
        """`(ue[m] == i || ...)`: the launch's value of term m is one of the constants for which
        the condition holds. Index i + 1 is the i-th constant of `k.enum_values[m]`; one past
        the last stands for every other value."""
        m, consts, rel = enum
        domain = self.k.enum_values[m]
        idx = [i + 1 for i, v in enumerate(domain) if ir.enum_holds(v, consts, rel)]
        if rel is False and not self.enum_closed(m):
            idx.append(len(domain) + 1)
        return "(" + (" || ".join(f"ue[{m}] == {i}" for i in idx) or "false") + ")"

    def enum_closed(self, m: int) -> bool:
        """Whether term m's values are all in its domain (no 'every other value' index)."""
        return m < len(self.k.enum_closed) and self.k.enum_closed[m]

    def choice_paths(self, op: ir.Choice) -> int:
        """Paths through a branch inside one atomic sequence (capped past the budget) that may
        end in the same state. A CTA-uniform branch counts its widest side only: the first warp
        to reach it walks both sides, but they end in different states (`uc` differs), which SPIN
        stores anyway; every later warp walks the one side already chosen. Ending the sequence
        there would only add interleaving points. Access-only branches are walked as one path."""
        if self.accesses_only(op):
            return 1
        counts = []
        for alt in op.alternatives:
            n = 1
            for o in alt:
                if isinstance(o, ir.Choice) and self.has_effect(o):
                    n = min(n * self.choice_paths(o), PATH_BUDGET + 1)
            counts.append(n)
        total = max(counts) if op.shared is not None else sum(counts)
        return min(total, PATH_BUDGET + 1)

    def accesses_only(self, op) -> bool:
        """`_accesses_only`, except that a wgmma group commit counts the warp's groups when its
        warpgroup has peers (`wgc`): a branch holding one is not run side after side."""
        return _accesses_only(op, counted_commits=bool(self.wg_peers))

    def close_atomic(self, text: str):
        """Close the open atomic sequence; SPIN rejects an empty one."""
        last, info = self.lines[-1]
        if last.rstrip().endswith("atomic {"):
            self.lines[-1] = (last + " skip", info)
        self.emit(text, None)

    def lower_seq(self, pi: int, ops: list, indent: str):
        for op in _dedupe_accesses(ops):
            if isinstance(op, ir.Choice) and not self.has_effect(op):
                continue  # both sides only touch untracked buffers: the same model either way
            if self.accesses_only(op):
                self.lower_sides_together(pi, op, indent)
                continue
            self.lower_op(pi, op, indent)

    def lower_sides_together(self, pi: int, op: ir.Choice, indent: str):
        """A branch that may differ between warps and whose sides only access memory: every side
        runs, one after the other (P10, "Access-only branches"). Each access bit evolves on its
        own (every update is a bitwise or / and-not / copy, and an access's check masks out its
        own warp's bits), so the bits of one side end the same as on the path that took that
        side alone: the same races are found, and the warp's 2^n combinations of sides, which
        SPIN would otherwise keep as distinct states at every later wait, collapse into one."""
        role = self.k.processes[pi].role
        self.emit(indent + "skip", LineInfo(op.span, role, "runs every side of a runtime branch whose sides only "
                                            "load and store (the same races as taking each side alone)", "branch"))
        self.lower_seq(pi, _dedupe_accesses(_side_accesses(op)), indent)

    def has_effect(self, op) -> bool:
        """Whether an op changes the model: accesses to untracked buffers lower to `skip`."""
        if isinstance(op, ir.Access):
            return op.region.index in self.tracked_ids
        if isinstance(op, ir.Choice):
            return any(self.has_effect(o) for alt in op.alternatives for o in alt)
        return True

    def config_groups(self) -> list:
        """The kernel's configurations grouped by the model they give: two configurations whose
        every process lowers to the same text (trip counts that only change how often a warp
        repeats an access it already made, or touches untracked buffers) are one configuration
        of the model, checked once (the first of the group stands for it in traces). Without
        this, each runtime loop that does not matter to synchronization multiplies the model
        text, and `spin -a` time, by its trip counts."""
        n = len(self.k.configs)
        if n <= 1 or any(len(p.variants) != n for p in self.k.processes):
            return [[i] for i in range(max(n, 1))]
        groups: dict = {}
        for ci in range(n):
            key = tuple(self._effective_key(p.variants[ci]) for p in self.k.processes)
            groups.setdefault(key, []).append(ci)
        self.group_keys = list(groups)
        return list(groups.values())

    def _refuse_if_certainly_too_large(self, keys: list):
        """Raise ModelTooLarge before anything is emitted when the model will be over the limit
        anyway: every element of an effective key emits at least one line (`lower_op` emits a
        line for every op, a kept branch its `if`), and a process whose groups lower differently
        is emitted once per group. Emitting up to the limit first took most of the lowering time
        of the models refused (a 40 000-line model: seconds of `lower_seq`)."""
        if line_floor(keys) > MAX_MODEL_LINES:
            raise ModelTooLarge(f"the unrolled model has more than {MAX_MODEL_LINES} Promela lines; "
                                f"pin a smaller loop bound or fewer stages")

    def _effective_key(self, ops: list) -> tuple:
        """What `lower_seq` makes of `ops`, as a comparable value: untracked accesses (`skip`)
        and effect-free branches dropped, then an access identical to the one before it dropped
        (the same bits again: see `_dedupe_accesses`)."""
        out = []
        flat = []
        for o in ops:  # an access-only branch lowers to its sides' accesses (`lower_sides_together`)
            flat += _side_accesses(o) if self.accesses_only(o) else [o]
        for op in _dedupe_accesses([o for o in flat if not (isinstance(o, ir.Access)
                                                             and o.region.index not in self.tracked_ids)]):
            if isinstance(op, ir.Choice):
                if not self.has_effect(op):
                    continue
                out.append(("choice", op.span, op.shared, op.swapped, op.enum,
                            tuple(self._effective_key(alt) for alt in op.alternatives)))
            else:
                out.append(_op_key(op))
        return tuple(out)

    def complete_named(self, i: int, total: str) -> str:
        moves = []
        for key in self.vis_keys:
            for r in self.wkeys(key):
                moves += [f"nd{i}_{r} = na{i}_{r}", f"na{i}_{r} = 0"]
        body = "; ".join([f"nn[{i}] = 0", f"ng[{i}] = 1 - ng[{i}]"] + moves)
        return f"if :: (nn[{i}] > 0 && nn[{i}] >= {total}) -> {body} :: else -> skip fi"

    def complete_cluster(self, c: int) -> str:
        moves = []
        for key in self.vis_keys:
            for r in self.wkeys(key):
                moves += [f"kd{c}_{r} = ka{c}_{r}", f"ka{c}_{r} = 0"]
        body = "; ".join([f"kn[{c}] = 0", f"kg[{c}] = 1 - kg[{c}]"] + moves)
        return f"if :: (kn[{c}] > 0 && kn[{c}] + kx[{c}] >= {self.warps_per_cluster[c]}) -> {body} :: else -> skip fi"

    def exit_stmts(self, pi: int) -> list:
        p = self.k.processes[pi]
        c = p.cta // self.k.cluster_size
        stmts = [f"ex[{p.cta}] = ex[{p.cta}] + 1", f"kx[{c}] = kx[{c}] + 1"]
        if pi in self.wg_peers:
            stmts.append(f"wgx{pi} = 1")  # its peers' wait_group no longer waits for its groups
        for i, (cta, bid) in enumerate(self.named):
            if cta == p.cta and None in self.named_threads[(cta, bid)]:
                stmts.append(self.complete_named(i, f"{self.warps_per_cta[cta] * 32} - 32 * ex[{cta}]"))
        if c in self.cluster_barriers:
            stmts.append(self.complete_cluster(c))
        stmts.append(f"if :: (ex[{p.cta}] == {self.warps_per_cta[p.cta]}) -> dead[{p.cta}] = 1 :: else -> skip fi")
        return stmts

    # ------------------------------------------------------------------ whole model
    def build(self) -> PromelaModel:
        k = self.k
        L = self.emit
        L("/* cutespin model: generated, position-free */", None)
        nb = self.nb
        L(f"int mb_p[{nb}]; int mb_t[{nb}]; byte mb_ph[{nb}]; byte mb_in[{nb}];", None)
        if self.init_slot:
            L(f"int mb_e[{len(self.init_slot)}];", None)
        nctas = max(1, k.ctas)
        L(f"byte ex[{nctas}]; bit dead[{nctas}];", None)
        ncl = max(1, len(self.clusters) and max(self.clusters) + 1)
        L(f"byte kn[{ncl}]; bit kg[{ncl}]; byte kx[{ncl}];", None)
        if self.named:
            L(f"int nn[{len(self.named)}]; bit ng[{len(self.named)}];", None)
        if self.flag_ids and self.flag_readers:  # values of flags nobody waits on are not kept
            L(f"int fv[{len(self.flag_ids)}];", None)
        for s in range(len(self.tma_slots)):
            L(f"bit tq{s};", None)
        for pi in sorted(self.wg_peers):
            L(f"short wgc{pi}; bit wgx{pi};", None)
        for pi, r in sorted(self.wg_reads):
            L(f"short lr{pi}_{r};", None)
        for r0 in sorted(self.tracked_ids):
            for w, r in enumerate(self.wkeys(r0)):
                names = [f"a_{r}"] + self.holders(r)
                if r0 in self.async_read_regions:
                    names.append(f"u_{r}")
                if r0 in self.async_read_kinds:
                    names.append(f"ar_{r}")
                if r0 in self.parts:
                    names += [f"an_{r}"] + [f"ap{j}_{r}" for j in range(len(self.parts[r0]))]
                    for j in range(len(self.parts[r0])):
                        names += self.holders(wkey(self.part_key(r0, j), w))
                L("; ".join(f"unsigned {n} : {self.width[r0]}" for n in names) + ";", None)
        L("byte cfg;", None)
        config_groups = self.config_groups()
        self._refuse_if_certainly_too_large(self.group_keys)
        if self.k.shared_conditions:
            L(f"byte uc[{len(self.k.shared_conditions)}];", None)
        if self.k.enum_values:
            L(f"byte ue[{len(self.k.enum_values)}];", None)
        proc_names = {}
        for pi, p in enumerate(k.processes):
            pname = f"P{pi}"
            proc_names[pname] = p.role
            L(f"proctype {pname}() {{", None)
            locals_ = ["byte sg = 0", "bit cg = 0"]
            L("  " + "; ".join(locals_) + ";", None)
            # The whole body is one atomic sequence: it loses atomicity only at a blocking wait, so
            # each warp runs from one wait to the next without interleaving (a Lipton reduction:
            # waits are right movers, arrives left movers, and races are found from
            # happens-before, not from timing). See docs/policies.md.
            # Runtime branches end and restart it (`lower_choice`).
            variants = [p.variants[g[0]] for g in config_groups] if len(p.variants) == len(k.configs) else p.variants
            distinct = []
            for v in variants:
                if not any(v is d or _same_ops(v, d) for d in distinct):
                    distinct.append(v)
            if len(distinct) == 1:
                L("  atomic {", None)
                self.paths = 1
                self.lower_seq(pi, distinct[0], "  ")
                L("  " + self.dstep(self.exit_stmts(pi)), LineInfo(None, p.role, "exits", "exit"))
                self.close_atomic("  }")
            else:
                L("  if", None)
                for ci, v in enumerate(variants):
                    L(f"  :: atomic {{ (cfg == {ci}) ->", None)
                    self.paths = 1
                    self.lower_seq(pi, v, "     ")
                    L("     " + self.dstep(self.exit_stmts(pi)), LineInfo(None, p.role, "exits", "exit"))
                    self.close_atomic("     }")
                L("  fi", None)
            L("}", None)
        if self.tma_slots:
            L("proctype Tma() {", None)
            L("end_tma: do", None)
            for (pi, b, rs, tx), s in self.tma_slots.items():
                stmts = [f"tq{s} == 1", f"tq{s} = 0", f"mb_t[{b}] = mb_t[{b}] - {tx}"]
                for r in rs:
                    if r in self.tracked_ids and b in self.waited:
                        tg = self.tma_group[pi]
                        stmts += self.set_bits(lambda k: f"br{b}_{k}", r, self.W(tg))
                stmts.append(self.complete_phase(b))
                self.emit("  :: atomic { " + self.dstep(stmts) + " }",
                          LineInfo(None, "TMA unit", f"completes a TMA load on {k.barriers[b].name}", "tma_complete", b,
                                   rs[0] if rs else -1))
            L("  od", None)
            L("}", None)
        L("init {", None)
        L("  atomic {", None)
        n = len(config_groups)

        def config_step(ci):  # a configuration that fixes uniform conditions: the trail says which values
            c = k.configs[config_groups[ci][0]] if k.configs else None
            return (LineInfo(k.def_span, "launch", f"takes the configuration {c.describe()}", "config")
                    if getattr(c, "cond_labels", ()) else None)
        if n > 1:
            L("    if", None)
            for ci in range(n):
                L(f"    :: cfg = {ci}", config_step(ci))
            L("    fi;", None)
        elif config_step(0) is not None:  # one configuration of a kernel checked a part at a time
            L("    cfg = 0;", config_step(0))
        for m, domain in enumerate(k.enum_values):
            # The launch's value of each uniform value compared with constants (P14): one of
            # them, or any other (the last index).
            last = len(domain) + (0 if self.enum_closed(m) else 1)
            L("    if " + " ".join(f":: ue[{m}] = {i}" for i in range(1, last + 1)) + " fi;", None)
        for pi in range(len(k.processes)):
            L(f"    run P{pi}();", None)
        if self.tma_slots:
            L("    run Tma();", None)
        L("  }", None)
        L("}", None)
        self.pack_effects()
        text_lines = [t for t, _ in self.lines]
        if len(text_lines) > MAX_MODEL_LINES:
            raise ModelTooLarge(f"the unrolled model has {len(text_lines)} Promela lines (limit {MAX_MODEL_LINES}); "
                                f"pin a smaller loop bound or fewer stages")
        # Visibility variables that no reachable state sets (a barrier that never carries a
        # region's accesses, another CTA's holders) go, with every statement that only keeps them
        # at 0: the same states, a smaller state vector and fewer statements (model/prune.py).
        # It keeps every line, so the size check above holds for its result. Past PRUNE_MAX_CHARS
        # the pass itself (about a second per 700 KB here) costs more than it saves in a search
        # that the time bound cuts short anyway, so large models are left whole.
        text = "\n".join(text_lines)
        if len(text) <= PRUNE_MAX_CHARS:
            text_lines = prune_zero_variables(text).split("\n")
        table = {i + 1: info for i, (_, info) in enumerate(self.lines) if info is not None}
        return PromelaModel("\n".join(text_lines) + "\n", table, proc_names, self.groups, self.tracked,
                            {b.index: b.name for b in k.barriers}, {f.index: f.name for f in k.flags},
                            narrow_sites=self.narrow_sites, narrow_reach=self.narrow_reach, notes=self.notes,
                            tma_store_dests=self.tma_store_dests, cp_async_dests=self.cp_async_dests,
                            async_read_kinds={r: sorted(v) for r, v in self.async_read_kinds.items()},
                            config_groups=config_groups)


def line_floor(keys: list) -> int:
    """The fewest lines a model can have whose config groups have these effective keys (one
    tuple per group, one key per process): a process is emitted once when every group lowers it
    alike, else once per group; every key element emits at least one line."""
    floor = 0
    for pi in range(len(keys[0]) if keys else 0):
        mine = [key[pi] for key in keys]
        floor += len(mine[0]) if all(m == mine[0] for m in mine) else sum(len(m) for m in mine)
    return floor


def wkey(key, w: int) -> str:
    """The variable key of word `w` of a visibility key: the key itself for word 0 (so a model
    whose regions fit one word reads as before), `<key>w<w>` past it."""
    return f"{key}" if w == 0 else f"{key}w{w}"


def word_part(mask: int, w: int) -> int:
    return (mask >> (MAX_BITS * w)) & WORD_MASK


def split_words(mask: int) -> list:
    """[(word, bits within the word)] of a mask over bit positions, the words it touches."""
    out, w = [], 0
    while mask:
        if mask & WORD_MASK:
            out.append((w, mask & WORD_MASK))
        mask >>= MAX_BITS
        w += 1
    return out


def _indent(text: str) -> str:
    return text[:len(text) - len(text.lstrip())]


def _replace_effects(text: str, render) -> str:
    parts = text.split(EFFECT)
    return "".join(render(int(p)) if i % 2 else p for i, p in enumerate(parts))


def _statements(stmts: list) -> int:
    """How many entries a d_step's statements take in SPIN's table (an `if` option counts
    twice: its guard and its body)."""
    joined = "\n".join(stmts)
    return len(stmts) + joined.count(";") + 2 * joined.count("::")


_NON_BLOCKING = re.compile(r"(assert\(|if |skip$|[A-Za-z_][\w\[\]]* = )")


def _blocking(stmt: str) -> bool:
    """Whether a statement may block: every statement of the lowering is an assert, an `if` with
    an `else`, `skip` or an assignment, except the guards of waits (bare conditions)."""
    return not _NON_BLOCKING.match(stmt)


# Ops whose lowering only checks and updates access bits (or is `skip`: group commits, whose
# meaning the front end already resolved into each wait's list of completed copies).
_BIT_OPS = (ir.Access, ir.CpAsyncCopy, ir.AsyncRead, ir.CpAsyncCommit, ir.AsyncReadCommit)


def _accesses_only(op, counted_commits: bool = False) -> bool:
    """A branch that may differ between warps (not CTA-uniform) whose sides hold only accesses
    (loads, stores, cp.async copies, asynchronous reads) and such branches. With
    `counted_commits`, a wgmma group commit is not an access (it counts groups)."""
    if not isinstance(op, ir.Choice) or op.shared is not None:
        return False
    return all((isinstance(o, _BIT_OPS) and not (counted_commits and isinstance(o, ir.AsyncReadCommit)
                                                 and o.kind == "wgmma"))
               or _accesses_only(o, counted_commits) for alt in op.alternatives for o in alt)


def _side_accesses(op: ir.Choice) -> list:
    """The accesses of every side of an access-only branch, in source order."""
    out = []
    for side, alt in enumerate(op.alternatives):
        if side in op.dead:
            continue  # no compiled kernel takes it (ir.Choice.dead)
        for o in alt:
            out += _side_accesses(o) if isinstance(o, ir.Choice) else [o]
    return out


def _dedupe_accesses(ops: list) -> list:
    """Drop an access identical to an earlier one of the same run of accesses (same region, kind,
    lanes, partition view and proxy, with only accesses in between): in the visibility encoding
    the second is a no-op. An access checks only other agents' bits and sets only its own
    agent's, so within a run (which executes atomically: nothing in it blocks) the accesses
    commute and repeat to no effect; any other op (a wait, an arrive, a fence, a branch) may
    change what the agent has seen and ends the run. (An access through another partition view
    updates another record, so it has another key and is kept.) Unrolled loops that stage one
    element after another (cuDNN's norm kernels: `sc` written 12 times between two barriers)
    shrink to one access per buffer."""
    out = []
    run: set = set()
    for op in ops:
        if isinstance(op, ir.Access):
            key = _access_key(op)
            if key in run:
                continue
            run.add(key)
        else:
            run = set()
        out.append(op)
    return out


def _access_key(op: ir.Access) -> tuple:
    return (op.region.index, op.write, op.lanes, op.part, op.async_read, op.what, op.exact)


def _same_ops(a: list, b: list) -> bool:
    return len(a) == len(b) and all(_op_key(x) == _op_key(y) for x, y in zip(a, b))


def _op_key(op):
    if isinstance(op, ir.Choice):
        return ("choice", op.span, op.shared, op.swapped, op.enum, tuple(tuple(_op_key(o) for o in alt) for alt in op.alternatives))
    d = dict(vars(op))
    return (type(op).__name__,) + tuple(sorted((k, repr(v)) for k, v in d.items()))


def configuration_groups(k: ir.KernelModel) -> list:
    """The kernel's configurations grouped by the model they give, without lowering it (for a
    model over the size limit as a whole, which may be checked one group at a time)."""
    return Lowering(k).config_groups()


def lower(k: ir.KernelModel, regions: Optional[frozenset] = None, statement_cap: Optional[int] = None) -> PromelaModel:
    """The kernel's Promela model, tracking races on `regions` only when given (every region that
    needs it otherwise); OverStatementCap once its statements pass `statement_cap`."""
    check_values(k)
    return Lowering(k, regions, statement_cap).build()


def tracked_region_weights(k: ir.KernelModel) -> dict:
    """The regions whose races the model tracks, each with the number of ops that access it: what
    its bookkeeping costs, roughly (each access updates every holder of the region's bits)."""
    tracked = Lowering(k).tracked_ids
    weights = dict.fromkeys(sorted(tracked), 0)
    for p in k.processes:
        for v in p.variants:
            for op in ir.walk(v):
                for r in ir.regions_touched(op):
                    if r in weights:
                        weights[r] += 1
    return weights
