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
from .values import LaneVal, ModuleRef, Smem, Unknown

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
}
SYNC_THREADS_CLASSES = {"PipelineAsync", "PipelineCpAsync", "PipelineOrder"}


@dataclass(frozen=True)
class Group:
    """`CooperativeGroup(agent, size)`: the arrival count it initialises a barrier with."""

    count: object  # int or Unknown


@dataclass(frozen=True)
class Pipeline:
    kind: str
    full: Smem
    empty: Smem
    stages: int
    tx: object  # int, None (unknown bytes) or 0
    cluster: int
    create_line: int
    # A package subclass (`class PipelineTmaAsync(cutlass.pipeline.PipelineTmaAsync)`): its methods
    # override the library's. `attrs`: what its `create` set with `object.__setattr__`.
    cls: object = field(default=None, compare=False)
    attrs: dict = field(default_factory=dict, compare=False)


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
        return None  # cluster size 1: arrivals are local
    return Unknown(f"pipeline attribute {attr}")


def mbar_attribute(arr: MbarArray, attr: str):
    if attr == "tx_count":
        return pipe_tx(arr.pipe) if arr.side == "full" else 0
    if attr == "num_stages":
        return arr.pipe.stages
    return Unknown(f"barrier array attribute {attr}")


def pipe_tx(pipe: Pipeline):
    return pipe.tx if pipe.tx is not None else Unknown("tx")


def _index_arg(it, v, node, meth):
    if isinstance(v, LaneVal):
        v = v.uniform()
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    it.unmodeled(node, f"sync_object.{meth}", "the stage index is not known")
    return None


def mbar_method(it, arr: MbarArray, meth: str, args, kwargs, node):
    """`MbarrierArray` methods, as cute-sync-api.md §9.1 describes them."""
    index = kwargs.get("index", args[0] if args else None)
    if meth in ("try_wait", "test_wait"):
        return Unknown("try result")
    i = _index_arg(it, index, node, meth)
    if i is None:
        return None
    bar = _bar(arr.bars, i % arr.pipe.stages)
    if meth == "get_barrier":
        return bar
    if meth == "wait":
        it.emit_wait(bar, kwargs.get("phase", args[1] if len(args) > 1 else None), node)
    elif meth == "arrive":
        style = arr.style
        _arrive(it, bar, style, node, pipe_tx(arr.pipe) if style == "tma" else 0)
    elif meth == "arrive_and_expect_tx":
        tx = kwargs.get("tx_count", args[1] if len(args) > 1 else None)
        _arrive(it, bar, "tma", node, tx if isinstance(tx, int) else Unknown("tx"))
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

    def advance(self, n: int = 1):
        for _ in range(n):
            self.index += 1
            self.count += 1
            if self.index == self.stages:
                self.index = 0
                self.phase ^= 1

    def copy(self) -> "PipeState":
        return PipeState(self.stages, self.index, self.phase, self.count)


@dataclass(frozen=True)
class Handle:
    """A producer/consumer handle: the stage it was acquired for, frozen."""

    pipe: Pipeline
    side: str  # "producer" | "consumer"
    index: int
    phase: int
    count: int


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
        return Unknown("group size")
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
    return Group(group_count(it, agent, size))


def h_make_state(it, args, kwargs, node):
    kind = _tail_name(kwargs.get("type", args[0] if args else None))
    stages = kwargs.get("stages", args[1] if len(args) > 1 else None)
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


def create(it, cls: str, args, kwargs, node):
    """`PipelineX.create(...)`: allocate (or take) the barriers, initialise them, maybe sync."""
    if cls == "PipelineTmaStore":
        s = kwargs.get("num_stages")
        if not isinstance(s, int):
            it.unmodeled(node, "PipelineTmaStore.create", "num_stages is not known")
            return Unknown("pipeline")
        return TmaStorePipeline(s)
    if cls not in CLASSES:
        it.unmodeled(node, f"{cls}.create", "this pipeline class is not modeled yet")
        return Unknown("pipeline")
    stages = kwargs.get("num_stages")
    prod = kwargs.get("producer_group")
    cons = kwargs.get("consumer_group")
    if not isinstance(stages, int) or not isinstance(prod, Group) or not isinstance(cons, Group) \
            or not isinstance(prod.count, int) or not isinstance(cons.count, int):
        it.unmodeled(node, f"{cls}.create", "stages or group sizes are not known; pin them")
        return Unknown("pipeline")
    cluster = it.ctx.cluster
    if cluster > 1 and cls in ("PipelineTmaAsync", "PipelineTmaUmma", "PipelineUmmaAsync", "PipelineAsyncUmma"):
        it.unmodeled(node, f"{cls}.create", "multicast signalling across a cluster is not modeled yet")
        return Unknown("pipeline")
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
    tx = kwargs.get("tx_count", 0)
    pipe = Pipeline(cls, full, empty, stages, tx if isinstance(tx, int) else None, cluster, line)
    _init_barriers(it, pipe, prod.count, cons.count, node)
    if kwargs.get("defer_sync") is not True:
        it.emit(ir.MbInitFence(it.span(node)))
        if cluster == 1 or cls in SYNC_THREADS_CLASSES:
            it.emit_named(0, None, True, node)
        else:
            it.emit(ir.ClusterArrive(it.span(node), relaxed=True))
            it.emit(ir.ClusterWait(it.span(node)))
    return pipe


def _init_barriers(it, pipe: Pipeline, prod: int, cons: int, node):
    from .interp import RawInit, _lowest

    if it.ctx.warp != 0:
        return
    saved = it.mask
    lane = _lowest(it.mask)
    it.elected_lanes.add(lane.bit_length() - 1)
    it.mask = lane
    span = it.span(node)
    for i in range(pipe.stages):
        it.emit(RawInit(span, pipe.full.at(offset=pipe.full.offset + i), prod))
        it.emit(RawInit(span, pipe.empty.at(offset=pipe.empty.offset + i), cons))
    it.mask = saved


def _bar(side_bar: Smem, index: int) -> Smem:
    return side_bar.at(offset=side_bar.offset + index)


def _state_arg(it, args, kwargs, node, meth) -> Optional[PipeState]:
    st = kwargs.get("state", args[0] if args else None)
    if isinstance(st, PipeState):
        return st
    if isinstance(st, Handle):
        return PipeState(0, st.index, st.phase, st.count)
    it.unmodeled(node, f"pipeline.{meth}", "the pipeline state is not known")
    return None


def _arrive(it, bar: Smem, style: str, node, tx: object = 0):
    """Arrive on `bar` the way `style` says (see CLASSES)."""
    from .interp import RawArrive, _lowest

    span = it.span(node)
    if style == "thread":
        it.emit(RawArrive(span, bar, 1, it.mask, "cta", False, True, 0))
    elif style in ("elect", "tma"):
        lane = _lowest(it.mask)
        it.elected_lanes.add(lane.bit_length() - 1)
        it.emit(RawArrive(span, bar, 1, lane, "cta", False, True,
                          (tx if isinstance(tx, int) else None) if style == "tma" else 0))
    elif style == "signal":
        lane0 = it.mask & 1
        if lane0:
            it.emit(RawArrive(span, bar, 1, lane0, "cta", False, True, 0))


def method(it, pipe, meth: str, args, kwargs, node):
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
        if prod_style in ("thread", "elect"):
            _arrive(it, _bar(pipe.full, st.index), prod_style, node)
    elif meth == "consumer_wait":
        it.emit_wait(_bar(pipe.full, st.index), st.phase, node)
    elif meth == "consumer_release":
        _arrive(it, _bar(pipe.empty, st.index), cons_style, node)
    elif meth == "producer_tail":
        _producer_tail(it, pipe, st, node)
    else:
        it.unmodeled(node, f"{pipe.kind}.{meth}", "pipeline method not modeled")
    return None


def _producer_acquire(it, pipe, st: PipeState, style: str, node, token=None):
    it.emit_wait(_bar(pipe.empty, st.index), st.phase, node)
    if style == "tma":
        _arrive(it, _bar(pipe.full, st.index), "tma", node, pipe.tx if pipe.tx is not None else Unknown("tx"))


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
    it.unmodeled(node, f"pipeline {part.side}.{meth}", "method not modeled")
    return None


def handle_method(it, h: Handle, meth: str, node):
    prod_style, cons_style = CLASSES[h.pipe.kind]
    if meth == "commit" and h.side == "producer":
        if prod_style in ("thread", "elect"):
            _arrive(it, _bar(h.pipe.full, h.index), prod_style, node)
        return None
    if meth == "release" and h.side == "consumer":
        _arrive(it, _bar(h.pipe.empty, h.index), cons_style, node)
        return None
    it.unmodeled(node, f"handle.{meth}", "method not modeled")
    return None


def attribute(v, attr: str):
    """Attributes of pipeline values (`state.index`, `handle.barrier`, ...)."""
    if isinstance(v, PipeState):
        if attr in ("index", "phase", "count", "stages"):
            return getattr(v, attr)
    if isinstance(v, Handle):
        if attr in ("index", "phase", "count"):
            return getattr(v, attr)
        if attr == "barrier":
            return _bar(v.pipe.full if v.side == "producer" else v.pipe.empty, v.index)
    if isinstance(v, Participant) and attr in ("state",):
        return v.state
    return Unknown(f"attribute {attr}")


def state_method(it, st: PipeState, meth: str, args, node):
    if meth == "advance":
        n = args[0] if args and isinstance(args[0], int) else 1
        st.advance(n)
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


def h_tcgen05_commit(it, args, kwargs, node):
    """`tcgen05.commit(bar, mask=None)`: one deferred arrive per executing thread once its MMAs end."""
    from .interp import RawArrive

    bar = args[0] if args else kwargs.get("mbar_ptr")
    if kwargs.get("mask") is not None or len(args) > 1 and args[1] is not None:
        it.unmodeled(node, "tcgen05.commit(mask=...)", "multicast commits are not modeled yet")
        return None
    if not isinstance(bar, Smem):
        it.unmodeled(node, "tcgen05.commit", "the barrier could not be resolved")
        return None
    it.emit(RawArrive(it.span(node), bar, 1, it.mask, "cta", False, True, 0))
    return None
