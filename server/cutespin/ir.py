"""The synchronization IR: what the front end hands to the lowering.

Everything here is concrete. The front end unrolls loops, evaluates the role predicates of each
(CTA, warp) and each lane, and resolves barrier pointers to numbered barriers, so every op names
fixed barriers, parities, counts and buffers. Runtime loop bounds become *trip-count
configurations*: one op tree per configuration (see `Process.variants`).

Data flows one way: frontend -> ir -> model -> engine -> findings. Nothing in this module knows
libcst or Promela.
"""
from __future__ import annotations

import operator

from dataclasses import dataclass, field, replace
from typing import Optional, Union

# ---------------------------------------------------------------------------------------------
# Source positions


@dataclass(frozen=True, order=True)
class Span:
    """A source range. Lines and columns are 1-based; columns count Unicode code points."""

    line: int
    column: int
    end_line: int
    end_column: int
    # The file, when it is not the analyzed one: a helper inlined from a sibling module of the
    # package. `anchor` is then the call in the analyzed file that led there (where an editor
    # shows the diagnostic).
    path: str = ""
    anchor: Optional["Span"] = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {
            "start": {"line": self.line, "column": self.column},
            "end": {"line": self.end_line, "column": self.end_column},
        }


# ---------------------------------------------------------------------------------------------
# Scopes


SCOPES = ("cta", "cluster", "gpu", "sys")


def scope_rank(scope: str) -> int:
    return SCOPES.index(scope)


def scope_needed(cta_a: int, cta_b: int, cluster_size: int) -> str:
    """The narrowest scope that contains two CTAs of the modeled grid."""
    if cta_a == cta_b:
        return "cta"
    if cta_a // cluster_size == cta_b // cluster_size:
        return "cluster"
    return "gpu"


# ---------------------------------------------------------------------------------------------
# Identities


@dataclass(frozen=True)
class Barrier:
    """One mbarrier: a numbered slot of a shared-memory allocation in one CTA."""

    index: int  # dense id, 0..n-1
    cta: int
    name: str  # human name for messages, e.g. "full[1]" (never reaches Promela)


@dataclass(frozen=True)
class Region:
    """A tracked memory buffer: an SMEM allocation (per stage) in one CTA, or a GMEM tensor."""

    index: int
    space: str  # "smem" | "gmem" | "init" (pseudo-region: a barrier's initialisation)
    cta: int  # owning CTA for smem; -1 for gmem
    name: str  # e.g. "sA[stage 2]" (messages only)


@dataclass(frozen=True)
class Flag:
    """A GMEM word used for signalling (atomics, release/acquire loads and stores)."""

    index: int
    name: str


# ---------------------------------------------------------------------------------------------
# Ops. Every op has a span. `lanes` is a bitmask over lane *classes* of the executing warp.


@dataclass
class Op:
    span: Span


@dataclass
class MbInit(Op):
    bar: Barrier
    count: int
    # The count did not fold and was derived from the arrivals the kernel makes, and some warp
    # makes its arrivals only under a choice (frontend `derive_arrival_counts`): in a run where
    # it makes none, the count is too high, so a deadlock on this barrier is not proven.
    count_from_choice: bool = False


@dataclass
class MbInitFence(Op):
    pass


@dataclass
class MbArrive(Op):
    """`count` arrivals in total (already multiplied by the number of arriving lanes)."""

    bar: Barrier
    count: int
    lanes: int  # lane-class mask whose accesses are released
    scope: str = "cta"
    remote: bool = False
    release: bool = True
    tx: int = 0  # expect-tx units added before the arrive (arrive_and_expect_tx)
    tx_known: bool = True
    # cp.async.mbarrier.arrive.noinc: the arrive fires once the arriving threads' earlier cp.async
    # copies have landed and publishes them; `done_copies` lists those copies (CpAsyncCopy ops)
    cp_async: bool = False
    done_copies: list = field(default_factory=list)


@dataclass
class MbExpectTx(Op):
    bar: Barrier
    tx: int
    tx_known: bool = True


@dataclass
class MbWait(Op):
    """Blocking parity wait: passes once the phase with parity `parity` has completed."""

    bar: Barrier
    parity: int
    lanes: int


@dataclass
class TmaLoad(Op):
    """An asynchronous bulk copy into `region` that completes `tx` units on `bar`."""

    bar: Barrier
    region: Optional[Region]
    tx: int
    lanes: int
    tx_known: bool = True
    # A cta_group::2 load issued by the pair's leader: with byte counts not known, the leader's
    # expect counts the peer CTA's matching copy too (frontend `_units_in`).
    pair: bool = False
    # A multicast copy to this many CTAs, bytes not known: the expect of the issuing CTA counts one
    # unit from each CTA of the group, each taken to multicast the same copy (frontend `_units_in`).
    mcast: int = 1
    # False when the copy's shared-memory view was selected with an index that did not fold
    # (see Access.exact), or when the load shares its region with loads into other constant parts
    # of the stage (frontend `_mark_merged_selections`): a race found through it may be between
    # disjoint parts.
    exact: bool = True
    # The other regions the same copy writes: a copy into a staged buffer that selects no stage
    # writes every stage (frontend `split_stages`); it is one copy, completing `tx` once.
    more: tuple = ()
    # How the trail names the copy: "a TMA load", or "a CLC query" for the tile scheduler's
    # asynchronous write of its response, which the model treats alike.
    what: str = "a TMA load"
    # Copies issued back to back by the same lanes on the same barrier into different constant
    # parts of the region (frost's `tma_load_tile` loop over sub-tiles, `sdO[None, k, None, s]`),
    # merged into this one op (frontend `merge_tma_batches`): as separate ops each would overwrite
    # the part before it, since a region does not tell parts apart. `tx` covers them all; with
    # byte counts not known they count `copies` units.
    copies: int = 1

    def regions(self) -> list:
        """Every tracked buffer the copy writes."""
        return ([self.region] if self.region is not None else []) + list(self.more)


@dataclass
class TmaStore(Op):
    """An asynchronous bulk copy reading `region` (SMEM -> GMEM)."""

    region: Optional[Region]
    lanes: int
    dest: Optional[Region] = None
    # False when the copy's shared-memory view was selected with an index that did not fold
    # (see Access.exact).
    exact: bool = True


@dataclass
class BulkCommit(Op):
    pass


@dataclass
class BulkWait(Op):
    """cp.async.bulk.wait_group: the stores of `done_groups` have been read (and written, unless read_only)."""

    pending: int
    read_only: bool
    done_stores: list = field(default_factory=list)  # TmaStore ops now complete


@dataclass
class CpAsyncCopy(Op):
    """An Ampere `cp.async` copy into `region`: written by the warp's cp.async unit, visible to the
    issuing lanes only once a `cp_async_wait_group` retires its group (CpAsyncWait)."""

    region: Region
    lanes: int
    part: Optional[str] = None  # thread-partition key of the destination view (see Access.part)
    # False when the copy's shared-memory view was selected with an index that did not fold
    # (see Access.exact).
    exact: bool = True


@dataclass
class CpAsyncCommit(Op):
    pass


@dataclass
class CpAsyncWait(Op):
    """cp.async.wait_group N: every group but the newest `pending` of this warp has landed."""

    pending: int
    lanes: int = 1
    done_copies: list = field(default_factory=list)  # CpAsyncCopy ops now complete


@dataclass
class AsyncRead(Op):
    """An asynchronous read of `region` issued by the lanes in `lanes` and performed by the warp's
    asynchronous unit until a matching `AsyncReadWait` retires it:
    - kind "wgmma": a warpgroup MMA reading an SMEM operand, retired by `warpgroup.wait_group(N)`
      (groups closed by `warpgroup.commit_group()`);
    - kind "tmem_ld": a tcgen05.ld from tensor memory, retired by `fence_view_async_tmem_load()`."""

    region: Region
    lanes: int
    kind: str = "wgmma"
    # False when the copy's shared-memory view was selected with an index that did not fold
    # (see Access.exact).
    exact: bool = True


@dataclass
class AsyncReadCommit(Op):
    kind: str = "wgmma"


@dataclass
class AsyncReadWait(Op):
    """Every group but the newest `pending` of this warp's `kind` reads has completed."""

    pending: int
    lanes: int = 1
    kind: str = "wgmma"
    done_reads: list = field(default_factory=list)  # AsyncRead ops now complete


@dataclass
class Access(Op):
    """A generic-proxy load or store of a tracked region by the lanes in `lanes`."""

    region: Region
    write: bool
    lanes: int
    async_read: bool = False  # read through the async proxy (wgmma / UMMA operand)
    # Key of a per-thread partition view (`thr_copy.partition_D(s)` etc., by call site): two
    # accesses through the same partition by different warps touch disjoint elements.
    part: Optional[str] = None
    # "dealloc": the access stands for dealloc_tmem / TmemAllocator.free (a read and a write of
    # every TMEM stage), so that messages name the deallocation.
    what: Optional[str] = None
    # False for `buf[i]` whose index did not fold: taken as the whole buffer, so a race found
    # through it may be between different elements (api: a possible race, not a counterexample).
    exact: bool = True


@dataclass
class Fence(Op):
    kind: str  # "proxy_async_shared" | "proxy_async_global" | "acq_rel"
    scope: str = "cta"
    lanes: int = 0


@dataclass
class NamedBarrier(Op):
    """bar.sync / bar.arrive on a CTA barrier. `threads` None = all threads of the CTA."""

    barrier_id: int
    threads: Optional[int]
    arriving: int  # threads this warp contributes
    wait: bool
    lanes: int
    # The count did not fold and was derived from the warps that use the barrier, some of them
    # under a runtime choice: in a run where a choice leaves a user out, the derived count is too
    # high, so a deadlock at this barrier is not proven (findings `derived_count`).
    count_from_choice: bool = False
    # The id did not fold (`cfg.inverse_barrier_id`): `barrier_id` numbers its CTA-uniform value
    # (SYMBOLIC_BARRIER_IDS and up), and this is its source text for messages.
    id_text: Optional[str] = None


SYMBOLIC_BARRIER_IDS = 1000  # above the 16 hardware ids: a symbolic id never equals a constant one


@dataclass
class SyncWarp(Op):
    pass


@dataclass
class ClusterArrive(Op):
    relaxed: bool = False


@dataclass
class ClusterWait(Op):
    pass


@dataclass
class FlagUpdate(Op):
    """An atomic/red/store on a GMEM flag: `op` is "add" | "set"."""

    flag: Flag
    op: str
    value: int
    release_scope: Optional[str]  # None when relaxed (no release)
    lanes: int
    arrivals: int = 1  # how many lanes perform it


@dataclass
class FlagWait(Op):
    """A spin until `flag <cmp> value`; an acquire at `acquire_scope` when not None."""

    flag: Flag
    cmp: str  # ">=", ">", "==", "!="
    value: int
    acquire_scope: Optional[str]
    lanes: int


ORDER_RELATIONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def enum_holds(value, consts, rel) -> bool:
    """Whether a `Choice.enum` condition (constants, relation) holds when the uniform value is
    `value` (a value outside the domain stands for one none of the constants is; it only exists
    in a domain without order comparisons)."""
    if isinstance(rel, str):
        return isinstance(value, int) and not isinstance(value, bool) and ORDER_RELATIONS[rel](value, next(iter(consts)))
    return (value in consts) == rel


@dataclass
class Choice(Op):
    """A runtime branch the model cannot decide: any alternative may run.

    `shared` is None for a condition that may differ between warps (each warp chooses on its
    own). Otherwise the condition is CTA-uniform and `shared` numbers its value: every warp of
    the CTA that evaluates the same condition value takes the same side, `alternatives[0]` when
    it is true and `alternatives[1]` when it is false (docs/policies.md P14).

    `enum` is set when the condition compares one uniform value with constants (`mode == "dual"`,
    `mode in ("col", "dual")`, `warp < self.load_warp`): (term number, the constants, True
    when `alternatives[0]` runs for them, False when it runs for every other value, or the
    order relation "lt"/"le"/"gt"/"ge" of `value <rel> constant`). Every such condition on the same
    value then agrees with the others (one value per CTA)."""

    alternatives: list  # list[list[Op]]
    shared: Optional[int] = None
    swapped: bool = False  # alternatives[0] is the source's `else` side (`if not c` on a shared c)
    enum: Optional[tuple] = None
    # `if const_expr(c):` whose value did not fold, decided when the kernel is compiled: "build"
    # when `c` is a free choice of the build (host attributes and arguments: every side is a
    # kernel someone compiles), "unknown" when it is computed from values the checker could not
    # compute, so a side may be one no build takes (a counterexample through it is possible, api).
    compile_time: str = ""
    # Alternatives no compiled kernel takes: after a `return` decided at trace time, the paths
    # that went on reached a `raise` (frontend `mark_dead_paths`). Lowered with a `false` guard.
    dead: tuple = ()
    # (line, text) of the runtime branch whose side this one follows, when it is no `if` of the
    # source: a wait or pipeline method on a phase or state the branch left differing between
    # its sides runs once per side, on the side that branch took (select_alternatives).
    follows: tuple = ()


@dataclass
class GuardedBlock(Op):
    """`if try_wait(...)`: the first alternative runs only once the wait would pass."""

    guard: MbWait
    then: list
    otherwise: list


OpT = Union[
    MbInit, MbInitFence, MbArrive, MbExpectTx, MbWait, TmaLoad, TmaStore, BulkCommit, BulkWait,
    CpAsyncCopy, CpAsyncCommit, CpAsyncWait, AsyncRead, AsyncReadCommit, AsyncReadWait, Access, Fence, NamedBarrier, SyncWarp, ClusterArrive, ClusterWait, FlagUpdate, FlagWait,
    Choice, GuardedBlock,
]


def walk_choices(ops, under: bool = False):
    """(op, whether it lies inside an alternative of a runtime choice), as `walk`."""
    for op in ops:
        yield op, under
        if isinstance(op, Choice):
            for alt in op.alternatives:
                yield from walk_choices(alt, True)


def walk(ops):
    """Every op of a list, descending into the alternatives of runtime choices, in order."""
    for op in ops:
        yield op
        if isinstance(op, Choice):
            for alt in op.alternatives:
                yield from walk(alt)


def regions_touched(op) -> set:
    """The indices of the regions an op reads or writes: every buffer a TMA load writes, a TMA
    store's source and destination, the `region` of any other data op."""
    if isinstance(op, TmaLoad):
        return {r.index for r in op.regions()}
    if isinstance(op, TmaStore):
        return {r.index for r in (op.region, op.dest) if r is not None}
    r = getattr(op, "region", None)
    return {r.index} if isinstance(r, Region) else set()


# ---------------------------------------------------------------------------------------------
# Processes and kernels


@dataclass(frozen=True)
class LaneClass:
    lanes: tuple  # lane ids in the class
    elected: bool = False

    @property
    def size(self) -> int:
        return len(self.lanes)

    def describe(self) -> str:
        if len(self.lanes) == 1:
            return f"lane {self.lanes[0]}" + (" (elected)" if self.elected else "")
        if len(self.lanes) == 32:
            return "all lanes"
        lo, hi = self.lanes[0], self.lanes[-1]
        if hi - lo + 1 == len(self.lanes):
            return f"lanes {lo}-{hi}"
        return f"{len(self.lanes)} lanes"


@dataclass
class Process:
    """One warp of one CTA. `variants[c]` is its op list under trip-count configuration c."""

    cta: int
    warp: int
    role: str  # e.g. "warp 0 (producer)"
    lane_classes: list  # list[LaneClass]
    variants: list  # list[list[Op]]

    @property
    def name(self) -> str:
        return f"CTA {self.cta} warp {self.warp}"


@dataclass(frozen=True)
class Unmodeled:
    line: int
    construct: str
    why: str
    path: str = ""  # a sibling module of the package; "" for the analyzed file


@dataclass
class TripConfig:
    """One assignment of trip counts to the kernel's runtime loop bounds."""

    trips: dict  # bound text -> trip count
    # CTA-uniform runtime conditions fixed in this configuration: (cta, uniform term) -> value,
    # and how to show each ("`has_x` (line 12) = True").
    conds: dict = field(default_factory=dict)
    cond_labels: tuple = ()

    def describe(self) -> str:
        parts = [f"{k} = {v}" for k, v in self.trips.items()] + list(self.cond_labels)
        return ", ".join(parts) or "no runtime loops"


@dataclass
class KernelModel:
    """Everything the lowering needs about one kernel."""

    name: str
    qualname: str
    path: str
    line: int  # the `def` line
    def_span: Span
    ctas: int
    cluster_size: int
    warps: int
    processes: list  # list[Process]
    barriers: list  # list[Barrier]
    regions: list  # list[Region]
    flags: list  # list[Flag]
    configs: list  # list[TripConfig]
    assumptions: list  # list[str]
    unmodeled: list  # list[Unmodeled]
    bounds: dict  # {"loop": int|None, "stages": int|None, "cluster": int}
    static_findings: list = field(default_factory=list)  # list[StaticFinding]
    strict: bool = False
    shared_conditions: list = field(default_factory=list)  # Choice.shared -> (cta, line) of its first site
    # Choice.enum term number -> the constants the value is compared with (sorted by repr)
    enum_values: list = field(default_factory=list)
    # Choice.enum term number -> whether enum_values covers every value (an order comparison
    # among its conditions: the constants and one value per gap); else one more index stands
    # for every other value.
    enum_closed: list = field(default_factory=list)
    # Sibling modules of the package whose code the model includes (an editor re-checks the
    # kernel when one of them changes).
    deps: list = field(default_factory=list)
    # The loop bound was chosen (a `loop` pin or the loop-bound setting), not defaulted.
    loop_chosen: bool = False
    # `while` loops whose bound text some warps compute and others read as data another warp
    # wrote (text, line of the reading loop): their trip counts are paired by assumption, so a
    # deadlock found with them is only possible (api).
    data_bounds: list = field(default_factory=list)
    # The front end ran out of budget before it checked the uniform conditions it found as
    # configurations of their own: what it left unknown there may not be unknown in a smaller run.
    splits_left: bool = False


def restrict_configs(k: "KernelModel", indices: list) -> "KernelModel":
    """The kernel under the configurations `indices` only: a model of its own, so that a kernel
    whose configurations make one model too large for SPIN is checked one part at a time."""
    n = len(k.configs)
    return replace(k, configs=[k.configs[i] for i in indices],
                   processes=[replace(p, variants=[p.variants[i] for i in indices]) if len(p.variants) == n else p
                              for p in k.processes])


def arrivals_per_phase(k: "KernelModel", bar_index: int):
    """(arrivals in total, arrivals per phase) on a barrier, counted over the longest trip-count
    configuration: every role that arrives is assumed to arrive once per use, so the per-phase
    count is total / uses; None when the roles arrive a different number of times."""
    total, uses = 0, set()
    for p in k.processes:
        ops = [op for op in (p.variants[-1] if p.variants else [])
               if isinstance(op, MbArrive) and op.bar.index == bar_index]
        if ops:
            total += sum(op.count for op in ops)
            uses.add(len(ops))
    if len(uses) != 1:
        return total, None
    n = uses.pop()
    return total, (total // n if total % n == 0 else None)


@dataclass
class StaticFinding:
    """A finding the front end proves without search (e.g. an init count over the maximum)."""

    kind: str
    message: str
    span: Span
    fix_hint: Optional[str] = None
