"""`cutlass.pipeline` classes, lowered to the mbarrier operations they perform underneath.

Each method emits exactly what the library does (reference: cute-sync-api.md §9): for example
`PipelineTmaAsync.producer_acquire` waits on `empty[i]` and then, on one elected lane per warp,
arrives with the expected transaction bytes on `full[i]`. Pipeline states are mutable objects
(`state.advance()` changes them in place, as in the DSL); handles freeze (index, phase).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .. import ir
from .values import LaneVal, Layout, ModuleRef, Smem, Unknown

# Which classes we model, and how each side signals. "thread": every calling thread arrives;
# "elect": one elected lane per warp arrives (tcgen05.commit or elect_one); "tma": the producer
# arrives with expect-tx on one elected lane after acquiring; "signal": one lane per warp per
# partner CTA arrives (cluster size 1: lane 0 of each warp); "none": the method does nothing.
CLASSES = {
    "PipelineAsync": ("thread", "thread"),
    "PipelineCpAsync": ("thread", "thread"),
    "PipelineTmaAsync": ("tma", "signal"),
    "PipelineTmaUmma": ("tma", "elect"),
    "PipelineUmmaAsync": ("elect", "thread"),
    "PipelineAsyncUmma": ("thread", "elect"),
    # CLC tile scheduler: lanes below the cluster size arm CTA `lane`'s full barrier with the
    # response bytes; every consumer thread releases on CTA 0's empty barrier.
    "PipelineClcFetchAsync": ("clc", "cta0"),
    # Two consumer groups share `empty`: a UMMA group (one commit per warp, the default release)
    # and an AsyncThread group (`consumer_release(st, PipelineOp.AsyncThread)`).
    "PipelineTmaMultiConsumersAsync": ("tma", "elect"),
}
CLC_RESPONSE_BYTES = 16
SYNC_THREADS_CLASSES = {"PipelineAsync", "PipelineCpAsync", "PipelineOrder"}


@dataclass(frozen=True)
class Group:
    """`CooperativeGroup(agent, size)`: the arrival count it initialises a barrier with."""

    count: object  # int or Unknown
    agent: str = ""


@dataclass(frozen=True)
class Pipeline:
    kind: str
    full: Smem
    empty: Smem
    stages: int
    tx: object  # int, None (unknown bytes) or 0
    cluster: int
    create_line: int
    # Multi-CTA clusters: this CTA's (v, m, n, l) coordinate in `cta_layout_vmnk` and the CTAs its
    # consumer releases reach (None: every signal is local, as in a 1-CTA cluster).
    coord: Optional[tuple] = None
    layout: Optional[Layout] = None
    mcast_mode: tuple = (1, 1)
    async_release: str = "signal"  # PipelineTmaMultiConsumersAsync's AsyncThread release style

    # A package subclass (`class PipelineTmaAsync(cutlass.pipeline.PipelineTmaAsync)`): its methods
    # override the library's. `attrs`: what its `create` set with `object.__setattr__`.
    cls: object = field(default=None, compare=False)
    attrs: dict = field(default_factory=dict, compare=False)


@dataclass
class OrderPipeline:
    """`PipelineOrder`: a token ring among `length` groups over `depth` stages; this warp's group
    waits on bar[index*length + group_id] and passes the token on bar[index*length + group_id + 1]."""

    bars: Smem
    depth: int
    length: int
    group_id: int
    state: "PipeState"


# The op type of each side's `MbarrierArray` (cute-sync-api.md §9.1), as an arrive style.
SIDE_STYLES = {
    "PipelineAsync": ("thread", "thread"),
    "PipelineCpAsync": ("thread", "thread"),
    "PipelineTmaAsync": ("tma", "thread"),
    "PipelineTmaUmma": ("tma", "elect"),
    "PipelineUmmaAsync": ("elect", "thread"),
    "PipelineAsyncUmma": ("thread", "elect"),
}


@dataclass(frozen=True)
class MbarArray:
    """`pipeline.sync_object_full` / `sync_object_empty`: the library's barrier array of one side,
    reached by subclasses that override pipeline methods."""

    pipe: Pipeline
    side: str  # "full" | "empty"

    @property
    def bars(self) -> Smem:
        return self.pipe.full if self.side == "full" else self.pipe.empty

    @property
    def style(self) -> str:
        prod, cons = SIDE_STYLES[self.pipe.kind]
        return prod if self.side == "full" else cons

    @property
    def stages(self) -> int:
        return self.pipe.stages

    @property
    def cluster(self) -> int:
        return self.pipe.cluster

    @property
    def kind(self) -> str:
        return self.pipe.kind

    @property
    def tx(self):
        """The bytes an arrive on this side expects: the pipeline's on `full`, none on `empty`."""
        return self.pipe.tx if self.side == "full" else 0


# The arrive style of each `PipelineOp` a kernel builds an `MbarrierArray` for (§9.1's table).
OP_STYLES = {"AsyncThread": "thread", "TCGen05Mma": "elect", "TmaLoad": "tma", "ClcLoad": "clc",
             "AsyncLoad": "cp_async"}


@dataclass(frozen=True)
class BarrierArray:
    """`pipeline.MbarrierArray(storage, num_stages, agent=(op, group), tx_count)` built by the
    kernel itself, outside any pipeline (cuDNN's block-sparse attention keeps one per operand):
    the same methods as a pipeline's side (`mbar_method`)."""

    bars: Smem
    stages: int
    style: str
    tx: object  # int, or None when the bytes do not fold
    cluster: int
    kind = "MbarrierArray"


def with_class(pipe, cls):
    """The result of a library `create` called through a package subclass."""
    if isinstance(pipe, Pipeline):
        set_class(pipe, cls)
    return pipe


def set_class(pipe: Pipeline, cls) -> None:
    object.__setattr__(pipe, "cls", cls)  # frozen like the library's own dataclass


def pipeline_attribute(pipe: Pipeline, attr: str):
    if attr == "sync_object_full":
        return MbarArray(pipe, "full")
    if attr == "sync_object_empty":
        return MbarArray(pipe, "empty")
    if attr == "num_stages":
        return pipe.stages
    if attr in ("producer_mask", "consumer_mask"):
        # In a 1-CTA cluster every arrival is local; in a larger one the mask picks remote CTAs,
        # which the barrier-array methods below do not follow (they report it instead).
        return None if pipe.cluster == 1 else Unknown(f"pipeline {attr} in a cluster")
    return Unknown(f"pipeline attribute {attr}")


def mbar_attribute(arr, attr: str):
    if attr == "tx_count":
        return pipe_tx(arr)
    if attr == "num_stages":
        return arr.stages
    return Unknown(f"barrier array attribute {attr}")


def h_mbarrier_array(it, args, kwargs, node):
    """`MbarrierArray(barrier_storage, num_stages, agent=(op, group), tx_count=0)`: warp 0's
    elected lane initialises each stage's barrier with the group's arrival count; nothing fences
    or syncs (the kernel does, before first use)."""
    storage = kwargs.get("barrier_storage", args[0] if args else None)
    stages = stage_count(it, kwargs.get("num_stages", args[1] if len(args) > 1 else None), node, "MbarrierArray")
    agent = kwargs.get("agent", args[2] if len(args) > 2 else None)
    tx = kwargs.get("tx_count", args[3] if len(args) > 3 else 0)
    op, group = agent if isinstance(agent, tuple) and len(agent) == 2 else (None, None)
    style = OP_STYLES.get(_tail_name(op))
    why = [w for bad, w in ((not isinstance(storage, Smem), "barrier_storage could not be resolved"),
                            (not isinstance(stages, int), "num_stages is not known; pin `stages`"),
                            (style is None, "the agent's PipelineOp is not known"),
                            (not isinstance(group, Group), "the agent's CooperativeGroup could not be followed"))
           if bad]
    if why:
        it.unmodeled(node, "pipeline.MbarrierArray", "; ".join(why))
        return Unknown("barrier array")
    label = it.outer_name or it.assign_name or "mbarrier_array"
    bars = storage.at(label=label, stage=None, label_base=storage.offset)
    _derived_groups(it, label, {"agent's group": group}, node)
    _init_arrays(it, stages, [(bars, group.count, label)], node)
    return BarrierArray(bars, stages, style, tx if isinstance(tx, int) else None, it.ctx.cluster)


def pipe_tx(pipe) -> object:
    """The expected bytes of a pipeline, a side of one or a barrier array (Unknown when they do
    not fold)."""
    return pipe.tx if pipe.tx is not None else Unknown("tx")


def _index_arg(it, v, node, meth):
    if isinstance(v, LaneVal):
        v = v.uniform()
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    it.unmodeled(node, f"sync_object.{meth}", "the stage index is not known")
    return None


def mbar_method(it, arr, meth: str, args, kwargs, node):
    """`MbarrierArray` methods (a pipeline's side, or an array the kernel built), as
    cute-sync-api.md §9.1 describes them."""
    index = kwargs.get("index", args[0] if args else None)
    if meth in ("try_wait", "test_wait"):
        return Unknown("try result")
    i = _index_arg(it, index, node, meth)
    if i is None:
        return None
    bar = _bar(arr.bars, i % arr.stages)
    if meth == "get_barrier":
        return bar
    if meth == "wait":
        it.emit_wait(bar, kwargs.get("phase", args[1] if len(args) > 1 else None), node)
    elif meth in ("arrive", "arrive_and_expect_tx") and arr.cluster > 1:
        # A package override arriving through the library's barrier array in a cluster: the
        # destination CTA mask it passes is not followed (local-only would miss remote arrivals).
        it.unmodeled(node, f"sync_object.{meth}", "arrival with a CTA mask in a cluster is not modeled")
    elif meth == "arrive" and arr.kind not in SIDE_STYLES and not isinstance(arr, BarrierArray):
        # PipelineClcFetchAsync / Order / TmaStore arrays: who arrives, and how, is not the
        # producer-or-consumer pattern of the classes above.
        it.unmodeled(node, f"sync_object.{meth}", f"an arrive through the barrier array of a {arr.kind}")
    elif meth == "arrive" and arr.style == "clc":
        # Each thread arms the barrier of the CTA it names: not followed.
        it.unmodeled(node, f"sync_object.{meth}", "an arrive through an MbarrierArray of PipelineOp.ClcLoad")
    elif meth == "arrive":
        style = arr.style
        _arrive(it, bar, style, node, pipe_tx(arr) if style == "tma" else 0)
    elif meth == "arrive_and_expect_tx":
        tx = kwargs.get("tx_count", args[1] if len(args) > 1 else None)
        _arrive(it, bar, "tma", node, tx if isinstance(tx, int) else Unknown("tx"))
    elif meth == "arrive_cp_async_mbarrier":
        # `cp_async_mbarrier_arrive_noinc(bars[i])`: each thread's arrive fires once its cp.async
        # copies have landed (the PipelineCpAsync producer's commit).
        from .interp import h_cp_async_arrive_noinc
        h_cp_async_arrive_noinc(it, [bar], {}, node)
    else:
        it.unmodeled(node, f"sync_object.{meth}", "barrier array method not modeled")
    return None


@dataclass(frozen=True)
class TmaStorePipeline:
    stages: int


@dataclass
class PipeState:
    """`PipelineState`: mutable, like the DSL's (advance() changes it in place)."""

    stages: int
    index: int
    phase: int
    count: int
    # Why the state is not known, when a runtime branch advanced it differently on its sides
    # (every alias of the object sees it: a helper's caller too). None: known.
    unknown: Optional[str] = None
    # After a CTA-uniform branch whose sides advanced it differently: ("sel", condition, state
    # where it holds, state where it does not), each a PipeState (itself possibly a select);
    # stages / index / phase / count are then not used. Methods run once per side (P14).
    alts: Optional[tuple] = None

    def advance(self, n: int = 1):
        """n steps in closed form (a folded `advance(2**40)` must not loop 2**40 times)."""
        if n <= 0:
            return
        if self.alts is not None:
            self.alts[2].advance(n)
            self.alts[3].advance(n)
            return
        if self.stages <= 0:  # no ring to wrap around (a mutated stage count): only the counters move
            self.index += n
            self.count += n
            return
        total = self.index + n
        self.count += n
        self.index = total % self.stages
        self.phase ^= (total // self.stages) & 1

    def copy(self) -> "PipeState":
        alts = None if self.alts is None else (self.alts[0], self.alts[1], self.alts[2].copy(), self.alts[3].copy())
        return PipeState(self.stages, self.index, self.phase, self.count, self.unknown, alts)

    def assign(self, other: "PipeState") -> None:
        """Take `other`'s value in place (the object may have aliases)."""
        self.stages, self.index, self.phase, self.count, self.unknown = (
            other.stages, other.index, other.phase, other.count, other.unknown)
        self.alts = None if other.alts is None else other.copy().alts

    def conditions(self) -> set:
        """The conditions a selected state is chosen on."""
        if self.alts is None:
            return set()
        return {self.alts[1]} | self.alts[2].conditions() | self.alts[3].conditions()


def pruned(st: PipeState, cond, holds: bool) -> PipeState:
    """A copy of `st` where `cond` has the value `holds`: its selects on `cond` reduced to that
    side (a state selected inside a branch on the same condition)."""
    if st.alts is None:
        return st.copy()
    _, c, a, b = st.alts
    if c == cond:
        return pruned(a if holds else b, cond, holds)
    return selected(c, pruned(a, cond, holds), pruned(b, cond, holds))


def selected(cond, a: PipeState, b: PipeState) -> PipeState:
    """The state that is `a` where `cond` holds and `b` where it does not: one state when they
    are equal."""
    a, b = pruned(a, cond, True), pruned(b, cond, False)
    if a == b:
        return a
    out = a.copy()
    out.alts = ("sel", cond, a, b)
    return out


def collapsed(st: PipeState) -> PipeState:
    """`st` with its selects of equal sides reduced (both sides advanced to the same state)."""
    if st.alts is None:
        return st
    return selected(st.alts[1], collapsed(st.alts[2]), collapsed(st.alts[3]))


def state_in(args, kwargs) -> Optional[PipeState]:
    """The pipeline state a pipeline method is given (`consumer_wait(state)`)."""
    st = kwargs.get("state", args[0] if args else None)
    return st if isinstance(st, PipeState) else None


@dataclass(frozen=True)
class Handle:
    """A producer/consumer handle: the stage it was acquired for, frozen."""

    pipe: Pipeline
    side: str  # "producer" | "consumer"
    index: int
    phase: int
    count: int


@dataclass(frozen=True)
class HandleSel:
    """Handles acquired on a pipeline state selected on uniform conditions (PipeState.alts):
    ("sel", condition, handle where it holds, handle where it does not). Its `commit()` /
    `release()` run once per side (KernelInterp.per_side)."""

    alts: tuple


@dataclass
class Participant:
    """`make_producer()` / `make_consumer()`: a pipeline plus its own state."""

    pipe: Pipeline
    side: str
    state: PipeState = field(default=None)


def _tail_name(v) -> str:
    return v.qualname.rsplit(".", 1)[-1] if isinstance(v, ModuleRef) else ""


def group_count(it, agent, size) -> object:
    name = _tail_name(agent)
    if size is None:
        size = 1
    if not isinstance(size, int):
        return Unknown(f"group size: {_why(size)}")
    if name == "Thread":
        return size
    if name == "Warp":
        return size * 32
    if name == "ThreadBlock":
        return size * it.ctx.threads
    return Unknown(f"agent {name or '?'}")


def h_cooperative_group(it, args, kwargs, node):
    agent = kwargs.get("agent", args[0] if args else None)
    size = kwargs.get("size", args[1] if len(args) > 1 else None)
    return Group(group_count(it, agent, size), _tail_name(agent))


def stage_count(it, value, node, what: str):
    """A ring's stage count: an integer, or a host configuration value that does not fold
    (`tma_stages if USE_TMA else 2`, `self.cfg.depth`), which takes the kernel's stage count (the
    `stages` pin, or the default like any unfoldable `*_stages` attribute), stated. Anything else
    is left as it is (and reported where it is used)."""
    from .interp import DEFAULT_STAGES, _is_int, host_term

    if isinstance(value, Unknown) and not isinstance(value, LaneVal):
        # `self.num_stages_dKr = 2` on one side of the host's `if const_expr(mdK is not None)`:
        # the count of each configuration of that condition (flash-attn's MLA backward).
        value = it.select_index(value, node)
    if not isinstance(value, Unknown) or not host_term(value.key):
        return value  # a runtime value (a tensor's size) is not a configuration to guess
    n = it.registry.stages if _is_int(it.registry.stages) else DEFAULT_STAGES
    it.registry.assume(f"line {it.span(node).line}: the stage count of {what} is not known ({_why(value)}): "
                       f"assumed {n} stages (pin the real value with `# cutespin: stages=N`)")
    return n


def h_make_state(it, args, kwargs, node):
    kind = _tail_name(kwargs.get("type", args[0] if args else None))
    stages = stage_count(it, kwargs.get("stages", args[1] if len(args) > 1 else None), node, "make_pipeline_state")
    if not isinstance(stages, int):
        it.unmodeled(node, "make_pipeline_state", "the stage count is not known; pin `stages`")
        return Unknown("pipeline state")
    return PipeState(stages, 0, 0 if kind == "Consumer" else 1, 0)


def h_pipeline_state(it, args, kwargs, node):
    vals = [kwargs.get(k, args[i] if i < len(args) else None) for i, k in enumerate(("stages", "count", "index", "phase"))]
    if not all(isinstance(v, int) for v in vals):
        it.unmodeled(node, "PipelineState", "stages, count, index and phase must be known")
        return Unknown("pipeline state")
    stages, count, index, phase = vals
    return PipeState(stages, index, phase, count)


def _why(v) -> str:
    return v.why if isinstance(v, Unknown) else type(v).__name__


def _create_unknowns(stages, groups: dict) -> str:
    """Why `create()` cannot be lowered: which of its counts is not known, and why (empty if all are)."""
    out = []
    if not isinstance(stages, int):
        out.append(f"num_stages is not known ({_why(stages)}); pin `stages`")
    for name, g in groups.items():
        if not isinstance(g, Group):
            out.append(f"{name} is not a CooperativeGroup we could follow ({_why(g)})")
    return "; ".join(out)


def _derived_groups(it, label: str, groups: dict, node) -> None:
    """State the assumption for each group whose arrival count the source does not fold.

    Such a barrier is initialised with the arrivals the kernel itself makes on it per phase (see
    `derive_arrival_counts`): the protocol (parities, stages, ordering, races) is still checked,
    a count that disagrees with the arrivals is not.
    """
    for name, g in groups.items():
        if not isinstance(g.count, int):
            it.registry.assume(
                f"line {it.span(node).line}: the arrival count of {name} of `{label}` is not known "
                f"({_why(g.count)}): taken to be the arrivals the kernel makes on it per phase")


def create(it, cls: str, args, kwargs, node):
    """`PipelineX.create(...)`: allocate (or take) the barriers, initialise them, maybe sync."""
    if cls == "PipelineTmaStore":
        s = stage_count(it, kwargs.get("num_stages"), node, f"{cls}.create")
        if not isinstance(s, int):
            it.unmodeled(node, "PipelineTmaStore.create", "num_stages is not known")
            return Unknown("pipeline")
        return TmaStorePipeline(s)
    if cls == "PipelineOrder":
        return _create_order(it, kwargs, node)
    if cls not in CLASSES:
        it.unmodeled(node, f"{cls}.create", "this pipeline class is not modeled yet")
        return Unknown("pipeline")
    stages = stage_count(it, kwargs.get("num_stages"), node, f"{cls}.create")
    prod = kwargs.get("producer_group")
    cons = kwargs.get("consumer_group")
    async_release = "signal"
    if cls == "PipelineTmaMultiConsumersAsync":
        umma, asyn = kwargs.get("consumer_group_umma"), kwargs.get("consumer_group_async")
        why = _create_unknowns(stages, {"producer_group": prod, "consumer_group_umma": umma,
                                        "consumer_group_async": asyn})
        if not why and it.ctx.cluster > 1:
            why = "multi-CTA clusters are not modeled for this class yet"
        if why:
            it.unmodeled(node, f"{cls}.create", why)
            return Unknown("pipeline")
        known = isinstance(umma.count, int) and isinstance(asyn.count, int)
        cons = Group(umma.count + asyn.count if known else Unknown("group size: not folded"), umma.agent)
        # The library's legacy path: every lane of the async group arrives when forced, or when the
        # group is counted in threads (Agent.Thread with a multiple of 32).
        force = kwargs.get("force_deprecated_per_lane_signaling")
        per_lane = force is True or force is None and any(
            g.agent == "Thread" and isinstance(g.count, int) and g.count % 32 == 0 for g in (umma, asyn))
        async_release = "thread" if per_lane else "signal"
    why = _create_unknowns(stages, {"producer_group": prod, "consumer_group": cons})
    if why:
        it.unmodeled(node, f"{cls}.create", why)
        return Unknown("pipeline")
    cluster = it.ctx.cluster
    layout, coord, mode = None, None, (1, 1)
    if cluster > 1 and cls in MULTICAST_CLASSES:
        got = _cluster_layout(it, cls, kwargs, node)
        if got is None:
            return Unknown("pipeline")
        layout, coord, mode = got
    if (cls in ("PipelineTmaAsync", "PipelineTmaUmma") and kwargs.get("enable_multicast_signaling") is True
            and isinstance(cons.count, int) and cons.count % 32 == 0):
        # The library recounts the consumers: one signal per consumer warp per multicast partner
        # (a 1-CTA cluster, or no `cta_layout_vmnk`, has one partner: itself).
        cons = Group((_mcast_size(layout, mode) if layout is not None else 1) * (cons.count // 32))
    storage = kwargs.get("barrier_storage")
    line = it.span(node).line
    if storage is None:
        storage = Smem(alloc=f"reserved@{line}", label=it.assign_name or "pipeline", cta=it.ctx.cta)
    if not isinstance(storage, Smem):
        it.unmodeled(node, f"{cls}.create", "barrier_storage could not be resolved")
        return Unknown("pipeline")
    # Named after the kernel's variable, also when a subclass's `create` calls the library's.
    label = (it.outer_name or it.assign_name or "pipeline")
    full = storage.at(label=f"{label}.full", stage=None, label_base=storage.offset)
    empty = storage.at(label=f"{label}.empty", offset=storage.offset + stages, stage=None,
                       label_base=storage.offset + stages)
    _derived_groups(it, label, {"producer_group": prod, "consumer_group": cons}, node)
    tx = kwargs.get("tx_count", 0)
    pipe = Pipeline(cls, full, empty, stages, tx if isinstance(tx, int) else None, cluster, line,
                    coord, layout, mode, async_release)
    _init_barriers(it, pipe, prod.count, cons.count, label, node)
    if kwargs.get("defer_sync") is not True:
        it.emit(ir.MbInitFence(it.span(node)))
        if cluster == 1 or cls in SYNC_THREADS_CLASSES:
            it.emit_named(0, None, True, node)
        else:
            it.emit(ir.ClusterArrive(it.span(node), relaxed=True))
            it.emit(ir.ClusterWait(it.span(node)))
    return pipe


def _create_order(it, kwargs, node):
    depth, length, gid = kwargs.get("depth"), kwargs.get("length"), kwargs.get("group_id")
    prod = kwargs.get("producer_group")
    why = _create_unknowns(depth, {"producer_group": prod})
    if not why and not (isinstance(length, int) and isinstance(gid, int) and length > 0):
        why = "length or group_id is not known"
    if why:
        it.unmodeled(node, "PipelineOrder.create", why)
        return Unknown("pipeline")
    line = it.span(node).line
    storage = kwargs.get("barrier_storage")
    if storage is None:
        storage = Smem(alloc=f"reserved@{line}", label=it.assign_name or "order", cta=it.ctx.cta)
    if not isinstance(storage, Smem):
        it.unmodeled(node, "PipelineOrder.create", "barrier_storage could not be resolved")
        return Unknown("pipeline")
    bars = storage.at(label=f"{it.assign_name or 'order'}.bar", stage=None, label_base=storage.offset)
    _derived_groups(it, it.assign_name or "order", {"producer_group": prod}, node)
    if it.ctx.warp == 0:
        from .interp import RawInit, _lowest
        saved = it.mask
        it.mask = _lowest(it.mask)
        it.elected_lanes.add(it.mask.bit_length() - 1)
        for i in range(depth * length):
            known = isinstance(prod.count, int)
            it.emit(RawInit(it.span(node), _bar(bars, i), prod.count if known else None,
                            None if known else f"{bars.label}@{line}"))
        it.mask = saved
    if kwargs.get("defer_sync") is not True:
        it.emit(ir.MbInitFence(it.span(node)))
        it.emit_named(0, None, True, node)
    return OrderPipeline(bars, depth, length, gid, PipeState(depth, 0, 1 if gid == 0 else 0, 0))


def order_method(it, pipe: OrderPipeline, meth: str, args, kwargs, node):
    st = kwargs.get("state", args[0] if args else None)
    st = st if isinstance(st, PipeState) else pipe.state
    if st.unknown:
        it.unmodeled(node, f"PipelineOrder.{meth}", f"the pipeline state is not known: {st.unknown}")
        return None
    if meth == "wait":
        slot = st.index * pipe.length + pipe.group_id
    elif meth == "arrive":
        slot = st.index * pipe.length + (pipe.group_id + 1) % pipe.length
    else:
        it.unmodeled(node, f"PipelineOrder.{meth}", "method not modeled")
        return None
    if not 0 <= slot < pipe.depth * pipe.length:
        it.unmodeled(node, f"PipelineOrder.{meth}", f"group_id {pipe.group_id} selects no barrier of the ring")
        return None
    if meth == "wait":
        it.emit_wait(_bar(pipe.bars, slot), st.phase, node)
    else:
        _arrive(it, _bar(pipe.bars, slot), "thread", node)
        st.advance()
    return None


MULTICAST_CLASSES = ("PipelineTmaAsync", "PipelineTmaUmma", "PipelineUmmaAsync", "PipelineAsyncUmma")


def _cluster_layout(it, cls, kwargs, node):
    """The cluster as `create()` sees it: (layout, this CTA's coordinate, mcast_mode_mn), with
    layout None when the pipeline signals locally only (no `cta_layout_vmnk`: the library then
    treats the cluster as one CTA). None (after reporting) when it cannot be followed."""
    layout = kwargs.get("cta_layout_vmnk")
    mode = kwargs.get("mcast_mode_mn", (1, 1))
    if layout is None:
        return None, None, (1, 1)
    sizes = layout.mode_sizes() if isinstance(layout, Layout) else None
    if sizes is None or len(sizes) != 4 or layout.size() != it.ctx.cluster:
        it.unmodeled(node, f"{cls}.create", "cta_layout_vmnk did not fold to a (V, M, N, L) layout of the "
                     "cluster's size; multicast signalling needs each CTA's coordinate")
        return None
    if sizes[0] != 1 and not (sizes[0] == 2 and cls in PAIR_CLASSES):
        it.unmodeled(node, f"{cls}.create", "2-CTA (cta_group::2) UMMA pairs (V = 2) are not modeled yet")
        return None
    if not (isinstance(mode, tuple) and len(mode) == 2 and all(isinstance(x, int) for x in mode)):
        it.unmodeled(node, f"{cls}.create", "mcast_mode_mn is not known")
        return None
    return layout, layout.coord(it.ctx.cta % it.ctx.cluster), mode


# 2-CTA pairs (V = 2 in `cta_layout_vmnk`, cta_group::2) are modeled for these classes: the
# leader (V coordinate 0) arms the TMA pipeline's full barrier for the pair and commits the MMAs
# to both CTAs; the accumulator pipeline's consumers of both CTAs release on the leader's barrier.
PAIR_CLASSES = ("PipelineTmaUmma", "PipelineUmmaAsync", "PipelineAsyncUmma")


def is_pair(pipe: Pipeline) -> bool:
    return pipe.layout is not None and pipe.layout.mode_sizes()[0] == 2


def _partners(layout: Layout, coord: tuple, mode: tuple, peer: bool = False) -> int:
    """CTAs that multicast to this one (and that it signals back): same M row when mode m is on
    (A is multicast along N), same N column when mode n is on (mask modes 2 and 1). With `peer`
    (PipelineTmaUmma), also those of the CTA with the other V coordinate (the 2-CTA peer)."""
    mask = 0
    coords = [coord]
    if peer and layout.mode_sizes()[0] == 2:
        coords.append((coord[0] ^ 1,) + tuple(coord[1:]))
    for c in coords:
        if mode[0]:
            mask |= layout.image_mask(c, 2)
        if mode[1]:
            mask |= layout.image_mask(c, 1)
    return mask


def _mcast_size(layout: Layout, mode: tuple) -> int:
    sizes = layout.mode_sizes()
    return (sizes[2] if mode[0] else 0) + (sizes[1] if mode[1] else 0) - (1 if mode[0] and mode[1] else 0)


def _init_barriers(it, pipe: Pipeline, prod: object, cons: object, label: str, node):
    _init_arrays(it, pipe.stages, [(pipe.full, prod, f"{label}.full"), (pipe.empty, cons, f"{label}.empty")], node)


def _init_arrays(it, stages: int, arrays: list, node):
    """`if warp_idx == 0: with elect_one(): mbarrier_init(bars[i], count)` for every stage of each
    (bars, count, label) in `arrays`, stage by stage; a count that does not fold is derived from
    the arrivals later (`derive_arrival_counts`)."""
    from .interp import RawInit, _lowest

    if it.ctx.warp != 0:
        return
    saved = it.mask
    lane = _lowest(it.mask)
    it.elected_lanes.add(lane.bit_length() - 1)
    it.mask = lane
    span = it.span(node)
    for i in range(stages):
        for bars, count, label in arrays:
            known = isinstance(count, int)
            it.emit(RawInit(span, bars.at(offset=bars.offset + i), count if known else None,
                            None if known else f"{label}@{span.line}"))
    it.mask = saved


def _bar(side_bar: Smem, index: int) -> Smem:
    return side_bar.at(offset=side_bar.offset + index)


def _state_arg(it, args, kwargs, node, meth) -> Optional[PipeState]:
    st = kwargs.get("state", args[0] if args else None)
    if isinstance(st, PipeState):
        if st.unknown:
            it.unmodeled(node, f"pipeline.{meth}", f"the pipeline state is not known: {st.unknown}")
            return None
        return st
    if isinstance(st, Handle):
        return PipeState(0, st.index, st.phase, st.count)
    it.unmodeled(node, f"pipeline.{meth}", "the pipeline state is not known")
    return None


def _cluster_peer(it, bar: Smem, rank: int) -> Smem:
    """`bar` in the shared memory of CTA `rank` of this CTA's cluster (a remote address)."""
    base = (it.ctx.cta // it.ctx.cluster) * it.ctx.cluster
    return bar.at(cta=base + rank % it.ctx.cluster, remote=True)


def _arrive_on_pair_leader(it, pipe: Pipeline, bar: Smem, node):
    """Every calling thread arrives on the 2-CTA pair leader's barrier (remote from the peer):
    PipelineUmmaAsync's consumer_release and PipelineAsyncUmma's producer_commit, whose mask is
    the leader's rank."""
    from .interp import RawArrive

    leader = pipe.coord[0] == 0
    target = bar if leader else _cluster_peer(it, bar, (it.ctx.cta % it.ctx.cluster) // 2 * 2)
    it.emit(RawArrive(it.span(node), target, 1, it.mask, "cta" if leader else "cluster", not leader, True, 0))


def _release(it, pipe: Pipeline, bar: Smem, style: str, node):
    """`consumer_release`: in a multi-CTA cluster the TMA pipelines signal every multicast partner."""
    from .interp import RawArrive, _lowest

    if pipe.kind == "PipelineUmmaAsync" and is_pair(pipe):
        _arrive_on_pair_leader(it, pipe, bar, node)
        return
    if pipe.kind == "PipelineAsyncUmma" and is_pair(pipe):
        # consumer_mask = this CTA | its peer: the barrier of both CTAs of the pair.
        pair = (it.ctx.cta % it.ctx.cluster) // 2 * 2
        _elected_commit(it, bar, (pair, pair + 1), node)
        return
    if pipe.layout is None or pipe.kind not in ("PipelineTmaAsync", "PipelineTmaUmma"):
        _arrive(it, bar, style, node)
        return
    span = it.span(node)
    partners = _partners(pipe.layout, pipe.coord, pipe.mcast_mode, peer=pipe.kind == "PipelineTmaUmma")
    if pipe.kind == "PipelineTmaAsync":
        # Lane d of each warp (d < cluster size) arrives on partner CTA d's barrier.
        for lane in range(min(it.ctx.cluster, 32)):
            if it.mask >> lane & 1 and partners >> lane & 1:
                it.emit(RawArrive(span, _cluster_peer(it, bar, lane), 1, 1 << lane, "cluster", True, True, 0))
        return
    # PipelineTmaUmma: one elected tcgen05.commit with the multicast mask arrives on each partner.
    lane = _lowest(it.mask)
    it.elected_lanes.add(lane.bit_length() - 1)
    umma_commit_wait(it, span, lane)
    for rank in range(it.ctx.cluster):
        if partners >> rank & 1:
            it.emit(RawArrive(span, _cluster_peer(it, bar, rank), 1, lane, "cluster", True, True, 0))


def umma_commit_wait(it, span, lanes: int):
    """A tcgen05.commit arrives only once the committing thread's MMAs are over: their SMEM
    operand reads are retired on its lanes first (a plain arrive after the MMAs is not), so the
    arrive carries them to whoever waits on the barrier (policy P12)."""
    from .interp import RawAsyncReadWait

    it.emit(RawAsyncReadWait(span, 0, lanes, "umma"))


def _arrive(it, bar: Smem, style: str, node, tx: object = 0):
    """Arrive on `bar` the way `style` says (see CLASSES)."""
    from .interp import RawArrive, _lowest

    span = it.span(node)
    if style == "clc":
        for lane in range(min(it.ctx.cluster, 32)):
            if it.mask >> lane & 1:
                it.emit(RawArrive(span, _cluster_peer(it, bar, lane), 1, 1 << lane, "cluster", True, True,
                                  tx if isinstance(tx, int) else None))
    elif style == "cta0":
        it.emit(RawArrive(span, _cluster_peer(it, bar, 0), 1, it.mask, "cluster", True, True, 0))
    elif style in ("thread", "cp_async"):
        # PipelineCpAsync's producer side (PipelineOp.AsyncLoad) arrives with
        # cp.async.mbarrier.arrive.noinc: the arrive publishes the thread's cp.async copies.
        it.emit(RawArrive(span, bar, 1, it.mask, "cta", False, True, 0, cp_async=style == "cp_async"))
    elif style in ("elect", "tma"):
        lane = _lowest(it.mask)
        it.elected_lanes.add(lane.bit_length() - 1)
        if style == "elect":
            umma_commit_wait(it, span, lane)
        it.emit(RawArrive(span, bar, 1, lane, "cta", False, True,
                          (tx if isinstance(tx, int) else None) if style == "tma" else 0))
    elif style == "signal":
        lane0 = it.mask & 1
        if lane0:
            it.emit(RawArrive(span, bar, 1, lane0, "cta", False, True, 0))


def method(it, pipe, meth: str, args, kwargs, node):
    if isinstance(pipe, OrderPipeline):
        return order_method(it, pipe, meth, args, kwargs, node)
    if isinstance(pipe, TmaStorePipeline):
        return _tma_store_method(it, pipe, meth, node)
    prod_style, cons_style = CLASSES[pipe.kind]
    if meth in ("producer_get_barrier", "consumer_get_barrier"):
        st = _state_arg(it, args, kwargs, node, meth)
        if st is None:
            return Unknown("barrier")
        return _bar(pipe.full if meth == "producer_get_barrier" else pipe.empty, st.index)
    if meth == "make_participants":
        return (Participant(pipe, "producer", PipeState(pipe.stages, 0, 1, 0)),
                Participant(pipe, "consumer", PipeState(pipe.stages, 0, 0, 0)))
    if meth == "make_producer":
        return Participant(pipe, "producer", PipeState(pipe.stages, 0, 1, 0))
    if meth == "make_consumer":
        return Participant(pipe, "consumer", PipeState(pipe.stages, 0, 0, 0))
    if meth in ("producer_try_acquire", "consumer_try_wait"):
        return Unknown("try result")  # a hint only: the blocking call that follows still waits
    st = _state_arg(it, args, kwargs, node, meth)
    if st is None:
        return None
    token = kwargs.get("try_acquire_token", kwargs.get("try_wait_token", args[1] if len(args) > 1 else None))
    if meth == "producer_acquire":
        _producer_acquire(it, pipe, st, prod_style, node, token)
    elif meth == "producer_commit":
        if prod_style == "clc":
            it.unmodeled(node, f"{pipe.kind}.producer_commit", "the CLC pipeline is completed by the scheduler's "
                         "query (advance_to_next_work), not by a commit")
        elif prod_style in ("thread", "elect"):
            _commit(it, pipe, _bar(pipe.full, st.index),
                    "cp_async" if pipe.kind == "PipelineCpAsync" else prod_style, node)
    elif meth == "consumer_wait":
        it.emit_wait(_bar(pipe.full, st.index), st.phase, node)
    elif meth == "consumer_release":
        op = _tail_name(kwargs.get("op_type", args[1] if len(args) > 1 else None))
        style = pipe.async_release if pipe.kind == "PipelineTmaMultiConsumersAsync" and op == "AsyncThread" \
            else cons_style
        _release(it, pipe, _bar(pipe.empty, st.index), style, node)
    elif meth == "producer_tail":
        _producer_tail(it, pipe, st, node)
    else:
        it.unmodeled(node, f"{pipe.kind}.{meth}", "pipeline method not modeled")
    return None


def _commit(it, pipe: Pipeline, bar: Smem, style: str, node):
    """`producer_commit`: PipelineUmmaAsync of a 2-CTA pair commits (one elected tcgen05.commit)
    to the full barrier of both CTAs of the pair; PipelineAsyncUmma's producer threads of a pair
    arrive on the leader's full barrier; every other commit arrives locally."""
    if pipe.kind == "PipelineAsyncUmma" and is_pair(pipe):
        _arrive_on_pair_leader(it, pipe, bar, node)
        return
    if pipe.kind != "PipelineUmmaAsync" or not is_pair(pipe):
        _arrive(it, bar, style, node)
        return
    mask = pipe.layout.image_mask(pipe.coord, 0)
    _elected_commit(it, bar, [rank for rank in range(it.ctx.cluster) if mask >> rank & 1], node)


def _elected_commit(it, bar: Smem, ranks, node):
    """One elected tcgen05.commit arriving on `bar` in each CTA rank of `ranks` (locally in its
    own CTA, remotely at cluster scope in the others), once the committing warp's MMAs are done."""
    from .interp import RawArrive, _lowest

    span = it.span(node)
    lane = _lowest(it.mask)
    it.elected_lanes.add(lane.bit_length() - 1)
    umma_commit_wait(it, span, lane)
    for rank in ranks:
        target = _cluster_peer(it, bar, rank)
        local = target.cta == it.ctx.cta
        it.emit(RawArrive(span, bar if local else target, 1, lane, "cta" if local else "cluster", not local,
                          True, 0))


def _producer_acquire(it, pipe, st: PipeState, style: str, node, token=None):
    it.emit_wait(_bar(pipe.empty, st.index), st.phase, node)
    if style == "tma" and isinstance(pipe, Pipeline) and is_pair(pipe) and pipe.coord[0] != 0:
        return  # 2-CTA: only the pair leader arms the full barrier (for both CTAs' bytes)
    if style in ("tma", "clc"):
        _arrive(it, _bar(pipe.full, st.index), style, node, pipe.tx if pipe.tx is not None else Unknown("tx"))


def _producer_tail(it, pipe, st: PipeState, node):
    if pipe.kind == "PipelineUmmaAsync":
        # Only even CTA ranks run the tail: S-1 advances, then one acquire.
        if (it.ctx.cta % it.ctx.cluster) % 2 == 0:
            st.advance(pipe.stages - 1)
            _producer_acquire(it, pipe, st, "thread", node)
        return
    for _ in range(pipe.stages):
        it.emit_wait(_bar(pipe.empty, st.index), st.phase, node)
        st.advance()


def _tma_store_method(it, pipe: TmaStorePipeline, meth, node):
    span = it.span(node)
    if meth == "producer_commit":
        it.emit(ir.BulkCommit(span))
    elif meth == "producer_acquire":
        it.emit(ir.BulkWait(span, pipe.stages - 1, True))
    elif meth == "producer_tail":
        it.emit(ir.BulkWait(span, 0, True))
    else:
        it.unmodeled(node, f"PipelineTmaStore.{meth}", "method not modeled")
    return None


def participant_method(it, part: Participant, meth: str, args, kwargs, node):
    pipe, st = part.pipe, part.state
    prod_style, cons_style = CLASSES[pipe.kind]
    if st.unknown and meth != "advance":
        it.unmodeled(node, f"{part.side}.{meth}", f"the pipeline state is not known: {st.unknown}")
        return Unknown("pipeline handle")
    if meth in ("acquire", "acquire_and_advance") and part.side == "producer":
        _producer_acquire(it, pipe, st, prod_style, node)
        h = Handle(pipe, "producer", st.index, st.phase, st.count)
        if meth == "acquire_and_advance":
            st.advance()
        return h
    if meth in ("wait", "wait_and_advance") and part.side == "consumer":
        it.emit_wait(_bar(pipe.full, st.index), st.phase, node)
        h = Handle(pipe, "consumer", st.index, st.phase, st.count)
        if meth == "wait_and_advance":
            st.advance()
        return h
    if meth == "advance":
        st.advance()
        return None
    if meth in ("commit", "release"):
        if args and isinstance(args[0], HandleSel):
            return it.per_side(args[0].alts, lambda h: handle_method(it, h, meth, node), node)
        h = args[0] if args and isinstance(args[0], Handle) else Handle(pipe, part.side, st.index, st.phase, st.count)
        return handle_method(it, h, meth, node)
    if meth == "tail" and part.side == "producer":
        _producer_tail(it, pipe, st, node)
        return None
    if meth in ("try_acquire", "try_wait"):
        return Unknown("try result")
    if meth == "reset":
        st.count = 0
        return None
    if meth == "current_handle":
        return Handle(pipe, part.side, st.index, st.phase, st.count)
    if meth == "clone":
        # `load_q_releaser = load_q_consumer.clone()` (flash-attn's hd256 backward): a second
        # participant of the same pipeline, at a copy of this one's state.
        return Participant(pipe, part.side, st.copy())
    it.unmodeled(node, f"pipeline {part.side}.{meth}", "method not modeled")
    # Not None: a method called on the result is unmodeled too, never taken for a trace failure.
    return Unknown(f"result of {part.side}.{meth}")


def handle_method(it, h: Handle, meth: str, node):
    prod_style, cons_style = CLASSES[h.pipe.kind]
    if meth == "commit" and h.side == "producer":
        if prod_style in ("thread", "elect"):
            _commit(it, h.pipe, _bar(h.pipe.full, h.index), prod_style, node)
        return None
    if meth == "release" and h.side == "consumer":
        _release(it, h.pipe, _bar(h.pipe.empty, h.index), cons_style, node)
        return None
    it.unmodeled(node, f"handle.{meth}", "method not modeled")
    return None


def attribute(v, attr: str):
    """Attributes of pipeline values (`state.index`, `handle.barrier`, ...)."""
    if isinstance(v, PipeState):
        if v.unknown and attr != "stages":
            return Unknown(f"pipeline state: {v.unknown}")
        if v.alts is not None and attr in ("index", "phase", "count", "stages"):
            from .interp import selected_field

            return selected_field(v, attr)
        if attr in ("index", "phase", "count", "stages"):
            return getattr(v, attr)
    if isinstance(v, Handle):
        if attr in ("index", "phase", "count"):
            return getattr(v, attr)
        if attr == "barrier":
            return _bar(v.pipe.full if v.side == "producer" else v.pipe.empty, v.index)
    if isinstance(v, HandleSel) and attr in ("index", "phase", "count"):
        from .interp import selected_field

        return selected_field(v, attr)
    if isinstance(v, Participant) and attr in ("state",):
        return v.state
    return Unknown(f"attribute {attr}")


def state_method(it, st: PipeState, meth: str, args, node):
    if meth in ("advance", "advance_iters"):
        # `advance_iters(n)`: quack's PipelineStateWAdvance, n steps at once.
        n = args[0] if args else (1 if meth == "advance" else None)
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            st.advance(n)
        else:
            st.unknown = st.unknown or f"advanced by a count that is not known (line {it.span(node).line})"
        return None
    if meth == "clone":
        return st.copy()
    if meth == "reset_count":
        st.count = 0
        return None
    if meth == "reverse":
        st.index -= 1
        st.count -= 1
        if st.index < 0:
            st.index = st.stages - 1
            st.phase ^= 1
        return None
    it.unmodeled(node, f"PipelineState.{meth}", "method not modeled")
    return None


def clc_query(it, bar, node, response=None):
    """`ClcDynamicPersistentTileScheduler.advance_to_next_work(bar)` (and `issue_clc_query`): one
    elected lane issues the cluster launch control query; its 16-byte response is multicast to
    every CTA of the cluster and completes that many transaction bytes on each CTA's `bar`. With
    the raw call the response buffer is known: the query is an async write of it in every CTA
    (like a 16-byte TMA load), so reading it before the wait is a race."""
    from .interp import RawTmaLoad, _lowest

    if not isinstance(bar, Smem) or bar.inexact:
        it.unmodeled(node, "CLC query", "the response barrier could not be resolved")
        return None
    lane = _lowest(it.mask)
    if not lane:
        return None
    it.elected_lanes.add(lane.bit_length() - 1)
    dst = response if isinstance(response, Smem) and not response.tmem else None
    for rank in range(it.ctx.cluster):
        target = _cluster_peer(it, bar, rank) if it.ctx.cluster > 1 else bar
        written = dst.at(cta=target.cta) if dst is not None else None  # each CTA's own copy
        it.emit(RawTmaLoad(it.span(node), target, written, lane, nbytes=CLC_RESPONSE_BYTES, what="a CLC query"))
    return None


def h_issue_clc_query(it, args, kwargs, node):
    bar = args[0] if args else kwargs.get("mbar_ptr")
    response = args[1] if len(args) > 1 else kwargs.get("clc_response_ptr")
    return clc_query(it, bar, node, response)


def h_clc_response(it, args, kwargs, node):
    """`cute.arch.clc_response(ptr)`: a plain load of the 16-byte response the query wrote,
    ordered only by the wait on its barrier, decoded into (m, n, l, is_valid). The response is
    the same for every thread of the CTA (multicast), so the decoded values are CTA-uniform work
    tile values (P14): the n-th decode at one site agrees in every warp."""
    from .interp import _uniform_parts, Unknown

    ptr = args[0] if args else kwargs.get("result_addr", kwargs.get("ptr"))
    if not isinstance(ptr, Smem):
        it.unmodeled(node, "cute.arch.clc_response", "the response buffer could not be resolved")
    else:
        it.access(ptr, write=False, node=node)
    site = it.site_key(node)
    n = it.work_calls[site] = it.work_calls.get(site, 0) + 1
    parts = tuple(Unknown(f"CLC response {name}") for name in ("m", "n", "l", "is_valid"))
    return _uniform_parts(parts, f"{site}#{n}")


def h_tcgen05_commit(it, args, kwargs, node):
    """`tcgen05.commit(bar, mask=None)`: one deferred arrive per executing thread once its MMAs end."""
    from .interp import RawArrive

    bar = args[0] if args else kwargs.get("mbar_ptr")
    mask = kwargs.get("mask", args[1] if len(args) > 1 else None)
    if not isinstance(bar, Smem) or bar.inexact:
        it.unmodeled(node, "tcgen05.commit", "the barrier could not be resolved")
        return None
    if mask is None:
        umma_commit_wait(it, it.span(node), it.mask)
        it.emit(RawArrive(it.span(node), bar, 1, it.mask, "cta", False, True, 0))
        return None
    if not isinstance(mask, int) or isinstance(mask, bool):
        it.unmodeled(node, "tcgen05.commit(mask=...)", "the multicast CTA mask is not known")
        return None
    group = kwargs.get("cta_group", args[2] if len(args) > 2 else None)
    if _tail_name(group) == "TWO" and it.ctx.cluster < 2:
        it.unmodeled(node, "tcgen05.commit(cta_group=TWO)", "a 2-CTA commit outside a cluster of 2 or more CTAs")
        return None
    # Multicast commit: one arrive on the barrier at the same offset in every CTA of the mask.
    umma_commit_wait(it, it.span(node), it.mask)
    for rank in range(max(it.ctx.cluster, 1)):
        if mask >> rank & 1:
            target = _cluster_peer(it, bar, rank) if it.ctx.cluster > 1 else bar
            it.emit(RawArrive(it.span(node), target, 1, it.mask, "cluster" if target.remote else "cta",
                              target.remote, True, 0))
    return None
