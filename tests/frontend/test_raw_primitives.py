"""The raw primitive layer as cuDNN's frost and QSA kernels write it: barrier rings in
`cutlass.Array(..., space=smem)` addressed with `.subview(i)`, spin waits on
`mbarrier_try_wait_parity`, TMA tensor loads and stores, `tcgen05_mma` on SMEM descriptors with
`tcgen05_commit`, raw TMEM pointers with `tcgen05_ld` / `tcgen05_wait`, and module parameters
a generator injects with `globals().get`."""
import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of

HEAD = """\
import cutlass
import cutlass.cute as cute
from cutlass.experimental import primitives as prims

STAGES = 2
SMEM = cutlass.AddressSpace.smem
"""


def kernel(body: str, top: str = "") -> str:
    """A module whose `K.kernel` (two warps) runs `body`."""
    lines = "".join("        " + line + "\n" if line.strip() else "\n" for line in body.strip("\n").splitlines())
    return (HEAD + top + "\n\nclass K:\n    @cute.jit\n    def __call__(self, mA: cute.Tensor):\n"
            "        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))\n\n"
            "    @cute.kernel\n    def kernel(self, mA: cute.Tensor):\n" + lines)


def check(src: str):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def model(src: str):
    return build_models(src, "k.py", Settings())[0]


RING_SETUP = """\
full = cutlass.Array(cutlass.Int64, STAGES, space=SMEM)
empty = cutlass.Array(cutlass.Int64, STAGES, space=SMEM)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if prims.elect_sync():
        for i in cutlass.range_constexpr(STAGES):
            prims.mbarrier_init(full.subview(i), 1)
            prims.mbarrier_init(empty.subview(i), 1)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
n = mA.shape[0]
"""


def ring(flip_producer_phase: bool = True, releases: str = "1", stages: str = "STAGES", top: str = "") -> str:
    """A producer warp and a consumer warp over a ring of `stages`; the consumer arrives `releases`
    times on each stage's `empty` barrier (of count 1)."""
    flip = "phase = phase ^ 1" if flip_producer_phase else "pass"
    return kernel((RING_SETUP + f"""\
if warp == 0:
    phase = cutlass.Int32(1)
    for k in cutlass.range(n):
        s = k % STAGES
        if s == 0 and k != 0:
            {flip}
        while not prims.mbarrier_try_wait_parity(empty.subview(s), phase, time_limit=10_000_000):
            pass
        if prims.elect_sync():
            prims.mbarrier_arrive(full.subview(s))
else:
    phase = cutlass.Int32(0)
    for k in cutlass.range(n):
        s = k % STAGES
        if s == 0 and k != 0:
            phase = phase ^ 1
        while not prims.mbarrier_try_wait_parity(full.subview(s), phase, time_limit=10_000_000):
            pass
        if prims.elect_sync():
            for _ in cutlass.range_constexpr({releases}):
                prims.mbarrier_arrive(empty.subview(s))
""").replace("STAGES", stages), top=top)


def test_a_ring_of_smem_arrays_with_spin_waits_is_modeled_and_verified(require_spin):
    src = ring()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    waits = [op for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.MbWait)]
    assert {op.bar.index for op in waits} == {b.index for b in m.barriers}, "each subview is its own barrier"
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_producer_that_never_flips_its_phase_deadlocks(require_spin):
    src = ring(flip_producer_phase=False)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    deadlock = next(f for f in r.findings if f.code == "CS101")
    # Its third wait on `empty[0]` asks for parity 1 again, which passes while the consumer has
    # not released stage 0 yet: the producer refills it, `full[0]` completes twice, and the
    # consumer's wait for parity 0 never returns.
    assert deadlock.span.line == line_of(src, "try_wait_parity(full"), deadlock.message


def test_a_barrier_picked_at_a_runtime_index_is_unmodeled_not_guessed():
    src = kernel(RING_SETUP + """\
buf = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
if warp == 1:
    if prims.elect_sync():
        prims.mbarrier_arrive(full.subview(n % STAGES))
        prims.cp_async_bulk_tensor_shared_cta_global(buf, mA.iterator, (0, 0), empty.subview(n % STAGES))
        prims.tcgen05_commit(empty.subview(n % STAGES))
""")
    m = model(src)
    assert [(u.line, u.why) for u in m.unmodeled] == [
        (line_of(src, needle), "the barrier's index in its array is not known")
        for needle in ("mbarrier_arrive(full.subview(n", "cp_async_bulk_tensor", "tcgen05_commit")]


def test_a_spin_wait_on_an_unknown_parity_is_unmodeled_not_dropped():
    # Before, the spin became a loop with nothing in it: the wait vanished from the model.
    src = kernel(RING_SETUP + """\
if warp == 1:
    while not prims.mbarrier_try_wait_parity(full.subview(0), n & 1):
        pass
""")
    m = model(src)
    assert [u.line for u in m.unmodeled] == [line_of(src, "try_wait_parity(full")], m.unmodeled
    assert "parity is not known" in m.unmodeled[0].why


TEMPLATE = """
from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    stages: int = 2


PARAMS: Params = globals().get("FROST_TEMPLATE_PARAMS", Params())
RING: int = PARAMS.stages
"""


def test_template_parameters_take_their_default_and_say_so(require_spin):
    src = kernel(RING_SETUP.replace("STAGES", "RING"), top=TEMPLATE)
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert len(m.barriers) == 4  # RING = Params().stages = 2 full and 2 empty barriers
    assert any("FROST_TEMPLATE_PARAMS" in a and "default `Params()`" in a for a in m.assumptions), m.assumptions


ROW_TABLE = """
from typing import NamedTuple


class Params(NamedTuple):
    tile: tuple = (128, 256)


class Row(NamedTuple):
    stages: int
    dtype: object


PARAMS = globals().get("FROST_TEMPLATE_PARAMS", Params())
# Rows keyed by a tuple, picked by a template parameter (cuDNN's bprop GEMM fork, `_TILE_ROWS`).
_ROWS = {(128, 256): Row(stages=3, dtype=cutlass.Float16), (256, 256): Row(stages=2, dtype=cutlass.Float32)}
_ROW = _ROWS[tuple(getattr(PARAMS, "tile", (256, 256)))]
RING = _ROW.stages
"""


def test_a_row_picked_by_a_tuple_key_gives_the_ring(require_spin):
    src = ring(stages="RING", top=ROW_TABLE)
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert len(m.barriers) == 6  # the (128, 256) row: 3 stages of full and empty
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_dtype_width_folds_where_the_row_picks_the_dtype(require_spin):
    # `width // 16` releases per stage: one for the Float16 row, two for the Float32 row, which
    # complete `empty` ahead of the producer.
    src = ring(releases="_ROW.dtype.width // 16", top=ROW_TABLE)
    assert not model(src).unmodeled
    assert check(src).verdict == "verified"
    r = check(ring(releases="_ROWS[(256, 256)].dtype.width // 16", top=ROW_TABLE))
    assert r.verdict == "counterexample", r.reason


def mma_pipeline(commit_before_mma: bool = False) -> str:
    """A TMA producer warp and an MMA warp over two stage buffers (one array each)."""
    mma = ("prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, acc, _desc(sa), _desc(sa), idesc, k > 0)")
    commit = "prims.tcgen05_commit(empty.subview(s), group=prims.CTAGroup.CTA_1)"
    first, second = (commit, mma) if commit_before_mma else (mma, commit)
    return kernel(RING_SETUP + f"""\
bufs = (cutlass.Array(cutlass.Float16, 4096, space=SMEM), cutlass.Array(cutlass.Float16, 4096, space=SMEM))
idesc = prims.Tcgen05InstrDesc.build(m=128, n=128)
mx_idesc = prims.Tcgen05MxInstrDesc.build(m=128, n=128)  # register values: nothing to model
acc = prims.make_tmem_ptr(0, cutlass.Float32)
if warp == 0:
    for k in cutlass.range(n):
        s = k % STAGES
        while not prims.mbarrier_try_wait_parity(empty.subview(s), ((k // STAGES) & 1) ^ 1):
            pass
        if prims.elect_sync():
            prims.mbarrier_arrive_expect_tx(full.subview(s), 8192)
            prims.cp_async_bulk_tensor_shared_cta_global(bufs[s], mA.iterator, (0, k), full.subview(s))
else:
    for k in cutlass.range(n):
        s = k % STAGES
        sa = bufs[s]
        while not prims.mbarrier_try_wait_parity(full.subview(s), (k // STAGES) & 1):
            pass
        if prims.elect_sync():
            {first}
            {second}
""", top="""

def _desc(addr):
    return prims.Tcgen05SmemDesc.build(start_address=addr, leading_byte_offset=16, stride_byte_offset=1024, layout=0)
""")


def test_tma_tensor_loads_feeding_tcgen05_mma_with_commit_are_verified(require_spin):
    src = mma_pipeline()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    ops = [op for p in m.processes for op in ir.walk(p.variants[-1])]
    assert sum(isinstance(op, ir.TmaLoad) for op in ops) >= 2
    assert any(isinstance(op, ir.Access) and op.region.space == "tmem" and op.write for op in ops)
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_committing_the_stage_before_the_mma_reads_it_races_with_the_next_load(require_spin):
    src = mma_pipeline(commit_before_mma=True)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line in (line_of(src, "cp_async_bulk_tensor_shared_cta_global"), line_of(src, "tcgen05_mma(")), \
        race.message


def epilogue(release_before_wait: bool = False) -> str:
    """An MMA warp writing a raw TMEM accumulator and an epilogue warp reading it with tcgen05_ld."""
    wait = "prims.tcgen05_wait(prims.Tcgen05Wait.LOAD)"
    release = """if prims.elect_sync():
            prims.mbarrier_arrive(empty.subview(0))"""
    first, second = (release, wait) if release_before_wait else (wait, release)
    return kernel(RING_SETUP + f"""\
idesc = prims.Tcgen05InstrDesc.build(m=128, n=128)
sa = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
if warp == 0:
    for k in cutlass.range(n):
        while not prims.mbarrier_try_wait_parity(empty.subview(0), (k & 1) ^ 1):
            pass
        if prims.elect_sync():
            acc = prims.make_tmem_ptr(0, cutlass.Float32)
            prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, acc, sa, sa, idesc, 0)
            prims.tcgen05_commit(full.subview(0))
else:
    for k in cutlass.range(n):
        while not prims.mbarrier_try_wait_parity(full.subview(0), k & 1):
            pass
        v = prims.tcgen05_ld("32x32b", prims.TmemAddr.from_row_col(0, 0), num=32)
        {first}
        {second}
""")


def test_a_raw_tmem_load_waited_before_the_release_is_verified(require_spin):
    src = epilogue()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert any("raw TMEM pointer" in a for a in m.assumptions)
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_releasing_the_accumulator_before_tcgen05_wait_is_a_possible_race(require_spin):
    # Raw TMEM addresses are not traced to columns: the race is reported, as possible (P16).
    src = epilogue(release_before_wait=True)
    r = check(src)
    assert r.verdict == "inconclusive", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line in (line_of(src, "tcgen05_ld("), line_of(src, "tcgen05_mma(")), race.message


def test_tma_stores_drain_through_bulk_groups_and_the_proxy_fence_is_a_fence():
    src = kernel("""\
out = cutlass.Array(cutlass.Float32, 128, space=SMEM)
tid, _, _ = cute.arch.thread_idx()
prims.store_ext(cutlass.Float32(1.0), out.subview(tid), shared_space=prims.SharedSpace.shared_cta)
prims.fence_proxy(prims.Proxy.ASYNC_SHARED, space=prims.SharedSpace.shared_cta)
prims.barrier_cta_sync(0)
if tid == 0:
    prims.cp_async_bulk_tensor_global_shared_cta(mA.iterator, out, (0, 0))
    prims.cp_async_bulk_commit_group()
    prims.cp_async_bulk_wait_group(0, read=True)
""")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    kinds = {type(op).__name__ for p in m.processes for op in ir.walk(p.variants[-1])}
    assert {"TmaStore", "BulkCommit", "BulkWait", "Fence"} <= kinds, kinds
    # A TMA reduction (qsa's dQ accumulation) is the same bulk copy out of shared memory.
    reduced = src.replace("prims.cp_async_bulk_tensor_global_shared_cta(mA.iterator, out, (0, 0))",
                          "prims.cp_async_bulk_tensor_reduce(mA.iterator, out, prims.TMARedux.ADD, (0, 0))")
    assert reduced != src
    m = model(reduced)
    assert not m.unmodeled, m.unmodeled
    assert sum(isinstance(op, ir.TmaStore) for p in m.processes for op in ir.walk(p.variants[-1])) == 1


def test_string_spelled_atomics_and_reductions_are_the_atomics_they_name():
    src = kernel("""\
tid, _, _ = cute.arch.thread_idx()
prims.atomicrmw("add", mA.iterator + tid, cutlass.Float32(1.0), mem_order="relaxed", syncscope="gpu")
prims.red(prims.ReductionOp.ADD, prims.ReductionType.F32, mA.iterator + tid, cutlass.Float32(1.0),
          mem_order=prims.MemOrder.RELAXED)
""")
    m = model(src)
    assert not m.unmodeled, m.unmodeled


def test_ldmatrix_and_stmatrix_access_the_buffer_their_pointer_names():
    src = kernel("""\
sK = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
lane = cute.arch.lane_idx()
prims.stmatrix(sK.subview(lane * 8).data_ptr(), (0, 0, 0, 0), prims.MMALayout.ROW)
prims.barrier_cta_sync(0)
v = prims.ldmatrix(sK.subview(lane * 8).data_ptr(), 4, prims.MMALayout.ROW)
""")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    accesses = [op for op in ir.walk(m.processes[0].variants[-1]) if isinstance(op, ir.Access)]
    assert [(op.write, op.span.line, op.exact) for op in accesses] == [
        (True, line_of(src, "stmatrix"), False), (False, line_of(src, "ldmatrix"), False)]


def test_tensormap_updates_are_descriptor_writes_between_tensormap_fences():
    src = kernel("""\
prims.tensormap_replace(prims.TensormapField.GLOBAL_DIM, mA.iterator, new_value=7, ord=0)
prims.fence_proxy_release(prims.MemScope.GPU, from_proxy=prims.Proxy.GENERIC, to_proxy=prims.Proxy.TENSORMAP)
prims.fence_proxy_release(prims.MemScope.GPU, from_proxy=prims.Proxy.GENERIC, to_proxy=prims.Proxy.ASYNC_GLOBAL)
""")
    m = model(src)
    assert [(u.construct, u.line) for u in m.unmodeled] == [
        ("primitives.fence_proxy_release", line_of(src, "to_proxy=prims.Proxy.ASYNC_GLOBAL"))]
    assert any("tensormap proxy" in a for a in m.assumptions), m.assumptions
    assert any(isinstance(op, ir.Access) and op.write for op in ir.walk(m.processes[0].variants[-1]))


ASYNC_WRITERS = {
    # the CLC query writes its 16-byte response into every CTA of the cluster
    "clc": "prims.clusterlaunchcontrol_try_cancel(slot.subview(0), bar.subview(0), multicast=1)",
    # st.async of four 32-bit words into the peer's (here: this CTA's) copy of `slot`
    "dsmem": "cute.arch.store_async_dsmem(slot.subview(0), (1, 2, 3, 4), bar.subview(0), 0)",
    # the same through the MLIR LLVM dialect's inline assembly (cuDNN's and lightmoe's MoE
    # schedulers), one v4.b32 store whose addresses the snippet `mapa`s itself
    "llvm_asm": "store_peer_async(slot.subview(0), bar.subview(0), 0)",
}

# cuDNN's `store_i32_to_peer_cluster_smem_async` shape: addresses through llvm.ptrtoint, the
# snippet maps both to the peer CTA with `mapa` into its own registers.
PEER_STORE_HELPER = """
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T


@cute.jit
def store_peer_async(smem_ptr, mbar_ptr, rank):
    smem_addr = llvm.ptrtoint(T.i32(), smem_ptr.llvm_ptr)
    mbar_addr = llvm.ptrtoint(T.i32(), mbar_ptr.llvm_ptr)
    llvm.inline_asm(
        res=None,
        operands_=[smem_addr, mbar_addr, cutlass.Int32(rank).ir_value()],
        asm_string=\"\"\"{{
            .reg .u32 remote_addr;
            .reg .u32 remote_mbar;
            mapa.shared::cluster.u32 remote_addr, $0, $2;
            mapa.shared::cluster.u32 remote_mbar, $1, $2;
            st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [remote_addr], {1, 2, 3, 4}, [remote_mbar];
        }}\"\"\",
        constraints="r,r,r",
        has_side_effects=True,
    )


@cute.jit
def arrive_expect_on_peer(mbar_ptr, tx, rank):
    mbar_addr = llvm.ptrtoint(T.i32(), mbar_ptr.llvm_ptr)
    llvm.inline_asm(
        res=None,
        operands_=[mbar_addr, cutlass.Int32(rank).ir_value(), cutlass.Int32(tx).ir_value()],
        asm_string="mapa.shared::cluster.u32 remote_mbar, $0, $1; mbarrier.arrive.expect_tx.shared::cluster.b64 _, [remote_mbar], $2;",
        constraints="r,r,r",
        has_side_effects=True,
    )
"""


# One barrier (one arrival) and a 4-word slot, initialised by warp 0 before a CTA barrier.
ONE_SLOT_SETUP = """\
bar = cutlass.Array(cutlass.Int64, 1, space=SMEM)
slot = cutlass.Array(cutlass.Int32, 4, space=SMEM)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if prims.elect_sync():
        prims.mbarrier_init(bar.subview(0), 1)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
"""


@pytest.mark.parametrize("writer", sorted(ASYNC_WRITERS))
def test_an_async_write_completes_its_bytes_on_its_barrier(require_spin, writer):
    def src(wait: bool) -> str:
        spin = "while not prims.mbarrier_try_wait_parity(bar.subview(0), 0):\n    pass\n" if wait else ""
        return kernel(ONE_SLOT_SETUP + f"""\
if warp == 0:
    if prims.elect_sync():
        prims.mbarrier_arrive_expect_tx(bar.subview(0), 16)
        {ASYNC_WRITERS[writer]}
{spin}v = prims.load_ext(slot.subview(0), dtype=cutlass.Int32, count=4, shared_space=prims.SharedSpace.shared_cta)
""", top=PEER_STORE_HELPER if writer == "llvm_asm" else "")
    assert not model(src(True)).unmodeled
    assert check(src(True)).verdict == "verified"
    early = check(src(False))
    assert any(f.code == "CS201" for f in early.findings), early.reason


def peer_handoff(tx: int, per_lane: bool = False) -> str:
    """Warp 0 arms the barrier through the inline-asm peer arrive (rank 0: this CTA) and stores
    16 bytes with st.async; warp 1 waits for the phase and reads them. `per_lane`: the lanes below
    the cluster size store, each to the CTA of its own rank (lightmoe's scheduler broadcast)."""
    store = ("lane = cute.arch.lane_idx()\nif lane < 1:\n    store_peer_async(slot.subview(0), bar.subview(0), lane)"
             if per_lane else "if prims.elect_sync():\n    store_peer_async(slot.subview(0), bar.subview(0), 0)")
    store = store.replace("\n", "\n    ")
    return kernel(ONE_SLOT_SETUP + f"""\
if warp == 0:
    if prims.elect_sync():
        arrive_expect_on_peer(bar.subview(0), {tx}, 0)
    {store}
else:
    while not prims.mbarrier_try_wait_parity(bar.subview(0), 0):
        pass
    v = prims.load_ext(slot.subview(0), dtype=cutlass.Int32, count=4, shared_space=prims.SharedSpace.shared_cta)
""", top=PEER_STORE_HELPER)


def test_inline_asm_peer_arrive_and_store_are_the_arrive_and_async_write_they_spell(require_spin):
    assert not model(peer_handoff(16)).unmodeled
    assert check(peer_handoff(16)).verdict == "verified"
    # expecting more bytes than the store completes: the phase never completes
    short = check(peer_handoff(32))
    assert [f.code for f in short.findings] == ["CS101"], short.reason


def test_inline_asm_st_async_to_per_lane_peers_splits_by_peer(require_spin):
    assert not model(peer_handoff(16, per_lane=True)).unmodeled
    assert check(peer_handoff(16, per_lane=True)).verdict == "verified"


def test_inline_asm_through_a_register_of_unknown_rank_is_unmodeled():
    src = peer_handoff(16).replace("store_peer_async(slot.subview(0), bar.subview(0), 0)",
                                   "store_peer_async(slot.subview(0), bar.subview(0), mA.shape[0])")
    assert "mA.shape[0])" in src
    whys = [(u.construct, u.why) for u in model(src).unmodeled]
    assert ("map_dsmem_ptr", "the target CTA rank is not known") in whys, whys


def one_array_ring(mma_reads_stage: str = "s") -> str:
    """mma_pipeline over one array declared as STAGES x 4096 elements, selected with `.subview`."""
    return mma_pipeline().replace(
        "bufs = (cutlass.Array(cutlass.Float16, 4096, space=SMEM), cutlass.Array(cutlass.Float16, 4096, space=SMEM))",
        "sA = cutlass.Array(cutlass.Float16, STAGES * 4096, space=SMEM)").replace(
        "prims.cp_async_bulk_tensor_shared_cta_global(bufs[s],",
        "prims.cp_async_bulk_tensor_shared_cta_global(sA.subview(s * 4096),").replace(
        "sa = bufs[s]", f"sa = sA.subview(({mma_reads_stage}) * 4096).subview(64)")


def test_an_array_declared_as_stages_times_elements_is_a_staged_buffer(require_spin):
    src = one_array_ring()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert any("`sA` is declared as 2 x 4096 elements" in a for a in m.assumptions), m.assumptions
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_reading_the_stage_the_producer_refills_is_a_race_between_stages(require_spin):
    src = one_array_ring(mma_reads_stage="(s + 1) % STAGES")
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS201" for f in r.findings)


def sub_tile_ring(part: str = "i * 2048", mma_reads_stage: str = "s") -> str:
    """one_array_ring as cuDNN frost writes it: the element type does not fold (its SM107 prefill
    picks it from a config value) and each stage is filled by two copies, one sub-tile each."""
    return one_array_ring(mma_reads_stage).replace(
        "cutlass.Array(cutlass.Float16, STAGES * 4096", "cutlass.Array(mA.element_type, STAGES * 4096").replace(
        "prims.cp_async_bulk_tensor_shared_cta_global(sA.subview(s * 4096), mA.iterator, (0, k), full.subview(s))",
        "for i in cutlass.range_constexpr(2):\n"
        f"                        prims.cp_async_bulk_tensor_shared_cta_global(sA.subview(s * 4096 + {part}), mA.iterator, "
        "(i, k), full.subview(s))")


def test_sub_tile_copies_into_a_stage_are_one_load_of_a_staged_array_of_unknown_type(require_spin):
    src = sub_tile_ring()
    assert "sA.subview(s * 4096 + i * 2048)" in src and "mA.element_type, STAGES" in src
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    loads = [op for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.TmaLoad)]
    assert loads and all(op.copies == 2 and op.exact for op in loads), loads
    assert {op.region.name for op in loads} == {"sA[stage 0] (CTA 0)", "sA[stage 1] (CTA 0)"}
    assert any("TMA loads issued back to back on sA" in a for a in m.assumptions), m.assumptions
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_sub_tile_copies_into_the_same_part_overwrite_each_other(require_spin):
    r = check(sub_tile_ring(part="i * 0"))
    assert r.verdict == "counterexample", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert "while an earlier TMA load into the same buffer may still be in flight" in race.message


def test_sub_tile_copies_at_an_index_that_does_not_fold_are_not_merged(require_spin):
    r = check(sub_tile_ring(part="i * mA.shape[1]"))
    assert r.verdict == "inconclusive", r.reason
    assert "element index is not known" in r.reason


def test_an_mma_reading_the_stage_the_sub_tile_copies_refill_races(require_spin):
    r = check(sub_tile_ring(mma_reads_stage="(s + 1) % STAGES"))
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS201" for f in r.findings)


def test_an_array_view_of_a_pointer_is_that_memory_and_data_ptr_offsets_it(require_spin):
    # `cutlass.Array(base=ptr.data_ptr(k), shape=n, dtype=dt)`: the epilogue staging view cuDNN's
    # gated attention stores through; `mbarrier_wait_parity` is the try-wait without a time limit.
    def src(wait: bool, fenced: bool = True) -> str:
        fence = "prims.fence_proxy(prims.Proxy.ASYNC_SHARED, space=prims.SharedSpace.shared_cta)" if fenced else ""
        spin = ("while not prims.mbarrier_wait_parity(bar.subview(0), 0, prims.MBarrierWait.TRY):\n"
                "    pass\n") if wait else ""
        return kernel(f"""\
bar = cutlass.Array(cutlass.Int64, 1, space=SMEM)
sD = cutlass.Array(cutlass.BFloat16, STAGES * 4096, space=SMEM)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if prims.elect_sync():
        prims.mbarrier_init(bar.subview(0), 32)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
if warp == 0:
    tile = cutlass.Array(base=sD.data_ptr(4096), shape=4096, dtype=cutlass.BFloat16)
    prims.store_ext(cutlass.BFloat16(1.0), tile.subview(0), shared_space=prims.SharedSpace.shared_cta)
    {fence}
    prims.mbarrier_arrive(bar.subview(0))
else:
    {spin.replace(chr(10), chr(10) + "    ").rstrip()}
    if prims.elect_sync():
        prims.cp_async_bulk_tensor_global_shared_cta(mA.iterator, sD.data_ptr(4096), (0, 0))
        prims.cp_async_bulk_commit_group()
        prims.cp_async_bulk_wait_group(0, read=True)
""")
    m = model(src(True))
    assert not m.unmodeled, m.unmodeled
    stores = [op for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, (ir.Access, ir.TmaStore))]
    assert {op.region.name for op in stores} == {"sD[stage 1] (CTA 0)"}, [op.region.name for op in stores]
    assert check(src(True)).verdict == "verified"
    assert any(f.code == "CS201" for f in check(src(False)).findings)
    # The generic stores reach the TMA store (async proxy) only through the proxy fence.
    assert [f.code for f in check(src(True, fenced=False)).findings] == ["CS501"]


def test_a_stage_count_the_template_leaves_to_its_generator_takes_the_default(require_spin):
    # cuDNN's frost templates never bind `ab_stages`: the code that renders them prepends it.
    src = ring().replace("STAGES = 2\n", "").replace("STAGES", "ab_stages")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert len(m.barriers) == 4, m.barriers
    assert any("`ab_stages` is not bound in the module" in a for a in m.assumptions), m.assumptions
    assert check(src).verdict == "verified"


FROST_STATE = """

class RingState(NamedTuple):
    idx: object
    phase: object

    @classmethod
    def start(cls, phase: int = 0):
        return cls(idx=cutlass.Int32(0), phase=cutlass.Int32(phase))

    @staticmethod
    def stages_of(n):
        return n


def advance(state, stages):
    incr = state.idx + cutlass.Int32(1)
    return RingState(idx=incr % cutlass.Int32(stages), phase=state.phase ^ (incr // cutlass.Int32(stages)))
"""


def branchy_loads(k_side_copies: int = 1) -> str:
    """frost's token-tile load: one expect of bytes that do not fold, then the Q tile or the K
    tile into the same stage on the sides of a runtime branch; the ring indexed by a
    `NamedTuple` state that a `@classmethod` starts and a plain function advances."""
    k_copies = "\n".join(
        ["                prims.cp_async_bulk_tensor_shared_cta_global(bufs[st.idx], mA.iterator, (1, t), full.subview(st.idx))"]
        * k_side_copies)
    return kernel(RING_SETUP + f"""\
bufs = [cutlass.Array(cutlass.Float16, 4096, space=SMEM) for _ in range(STAGES)]
if warp == 0:
    st = RingState.start(phase=RingState.stages_of(1))
    for t in cutlass.range(n):
        while not prims.mbarrier_try_wait_parity(empty.subview(st.idx), st.phase):
            pass
        if prims.elect_sync():
            prims.mbarrier_arrive_expect_tx(full.subview(st.idx), mA.shape[1] * 2)
        if t < mA.shape[2]:
            if prims.elect_sync():
                prims.cp_async_bulk_tensor_shared_cta_global(bufs[st.idx], mA.iterator, (0, t), full.subview(st.idx))
        else:
            if prims.elect_sync():
{k_copies}
        st = advance(st, STAGES)
else:
    st = RingState.start()
    for t in cutlass.range(n):
        while not prims.mbarrier_try_wait_parity(full.subview(st.idx), st.phase):
            pass
        v = bufs[st.idx][0]
        if prims.elect_sync():
            prims.mbarrier_arrive(empty.subview(st.idx))
        st = advance(st, STAGES)
""", top="from typing import NamedTuple\n" + FROST_STATE)


def test_a_namedtuple_ring_state_with_a_classmethod_and_loads_on_branch_sides_is_verified(require_spin):
    src = branchy_loads()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    expects = [op for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.MbArrive) and op.tx]
    assert expects and all(op.tx == 1 for op in expects), [op.tx for op in expects]  # one copy per side, not two
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert any("match the TMA copies" in a for a in r.assumptions), r.assumptions


def test_branch_sides_issuing_different_copy_counts_leave_the_expect_unmodeled():
    m = model(branchy_loads(k_side_copies=2))
    assert any(u.construct == "mbarrier expect_tx" and "different numbers of TMA copies" in u.why
               for u in m.unmodeled), m.unmodeled


def test_arrays_built_by_a_comprehension_are_separate_allocations():
    src = kernel("""\
bufs = [cutlass.Array(cutlass.Float16, 4096, space=SMEM) for _ in range(STAGES)]
for i in cutlass.range(mA.shape[0]):
    one = cutlass.Array(cutlass.Float16, 64, space=SMEM)
    one[0] = bufs[0][0] + bufs[1][0]
""")
    m = model(src)
    allocs = {op.region.name for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.Access)}
    assert len({a for a in allocs if a.startswith("bufs")}) == 2, allocs
    assert len({a for a in allocs if a.startswith("one")}) == 1, allocs  # one allocation reused by the runtime loop


def staged_gemm(mma_stage: str = "s", block_scale: bool = False, a_operand: str = "desc") -> str:
    """frost's GEMM shape: A tiles in one `STAGES * n` array, the MMA descriptor built once at its
    start and advanced by whole stages in bytes, the accumulator a plain TMEM address, the full
    barriers reached through a `cute.make_ptr` base plus the stage."""
    return kernel(RING_SETUP + f"""\
sa = cutlass.Array(cutlass.Float16, STAGES * 4096, space=SMEM)
full_base = cute.make_ptr(cutlass.Int64, full.data_ptr(), mem_space=cute.AddressSpace.smem)
idesc = prims.Tcgen05InstrDesc.build(m=128, n=128)
root = prims.Tcgen05SmemDesc.build(start_address=sa, leading_byte_offset=16, stride_byte_offset=1024, layout=0)
acc_addr = mA.shape[1] & 0xFFFF
if warp == 0:
    for k in cutlass.range(n):
        s = k % STAGES
        while not prims.mbarrier_try_wait_parity(empty.subview(s), ((k // STAGES) & 1) ^ 1):
            pass
        if prims.elect_sync():
            prims.mbarrier_arrive_expect_tx(full.subview(s), 8192)
            prims.cp_async_bulk_tensor_shared_cta_global(sa.subview(s * 4096), mA.iterator, (0, k), full.subview(s))
else:
    for k in cutlass.range(n):
        s = k % STAGES
        while not prims.mbarrier_try_wait_parity(full_base + s, (k // STAGES) & 1):
            pass
        if prims.elect_sync():
            desc = root.advance_start_address(8192 * ({mma_stage}) + 32 * 0)
            @MMA@
            prims.tcgen05_commit(empty.subview(s), group=prims.CTAGroup.CTA_1)
""".replace("@MMA@", (
        "prims.tcgen05_mma_block_scale(prims.Tcgen05MMAKind.MXF8F6F4, prims.CTAGroup.CTA_1, acc_addr, desc, desc, "
        "idesc, k > 0, acc_addr + 256, acc_addr + 260)") if block_scale else
        f"prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, acc_addr, {a_operand}, desc, idesc, "
        "k > 0)"))


def test_a_descriptor_advanced_by_whole_stages_reads_that_stage(require_spin):
    src = staged_gemm()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_block_scaled_mma_on_raw_tmem_is_the_mma_with_its_scale_reads_covered(require_spin):
    src = staged_gemm(block_scale=True)
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified"
    assert any("scale-factor reads are taken as covered" in a for a in r.assumptions), r.assumptions


def test_an_a_operand_in_tmem_a_subview_of_a_raw_pointer_is_the_whole_tensor_memory(require_spin):
    """frost's `mma_ts_step`: A in TMEM, `make_tmem_ptr(base + col, dtype).subview(k * advance)`."""
    src = staged_gemm(a_operand="prims.make_tmem_ptr(acc_addr + 128, cutlass.Float16).subview(k * 8)")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert any("raw TMEM pointer" in a for a in r.assumptions), r.assumptions


def test_an_mma_reading_the_next_stage_races_with_its_load(require_spin):
    r = check(staged_gemm(mma_stage="(s + 1) % STAGES"))
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS201" for f in r.findings), [f.message for f in r.findings]


def phase_on_a_uniform_branch(consumer_flips: bool = True) -> str:
    """QSA's shape: whether a second tile runs is a CTA-uniform runtime condition; the side that
    runs it consumes one more phase, so after the branch the parity is a select on it."""
    flip = "phase = phase ^ 1" if consumer_flips else "pass"
    return kernel(RING_SETUP + f"""\
two = mA.shape[1] > 64
if warp == 0:
    if prims.elect_sync():
        prims.mbarrier_arrive(full.subview(0))
    if two:
        while not prims.mbarrier_try_wait_parity(empty.subview(0), 0):
            pass
        if prims.elect_sync():
            prims.mbarrier_arrive(full.subview(0))
else:
    phase = cutlass.Int32(0)
    while not prims.mbarrier_try_wait_parity(full.subview(0), phase):
        pass
    phase = phase ^ 1
    if prims.elect_sync():
        prims.mbarrier_arrive(empty.subview(0))
    if two:
        {flip}
        while not prims.mbarrier_try_wait_parity(full.subview(0), 1):
            pass
    while not prims.mbarrier_try_wait_parity(full.subview(0), phase ^ 1):
        pass
""")


def test_a_parity_set_on_a_uniform_branch_is_checked_per_side(require_spin):
    src = phase_on_a_uniform_branch()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    # One model: the spin after the branch waits per side, following the branch's own side.
    assert len(m.configs) == 1, m.configs
    follows = [o for p in m.processes for v in p.variants for o in ir.walk(v)
               if isinstance(o, ir.Choice) and o.follows]
    assert follows and {o.follows[1] for o in follows} == {"two"}, follows
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_parity_wrong_on_one_side_of_a_uniform_branch_deadlocks(require_spin):
    r = check(phase_on_a_uniform_branch(consumer_flips=False))
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS101" for f in r.findings), [f.message for f in r.findings]


def phase_over_many_uniform_branches(start: int = 0, branches: int = 5) -> str:
    """A parity flipped on one side of each of five CTA-uniform branches and used only after the
    last: as one select its term grows past the size limit before anything reads it."""
    conds = "\n".join(f"c{i} = mA.shape[{i % 3}] * {i + 2} > mA.shape[{(i + 1) % 3}] + {i + 7}"
                      for i in range(branches))
    arrive = "        if prims.elect_sync():\n            prims.mbarrier_arrive(full.subview(0))"
    producer = "\n".join(f"    if c{i}:\n{arrive}" for i in range(branches))
    consumer = "\n".join(f"    if c{i}:\n        phase = phase ^ 1" for i in range(branches))
    return kernel(RING_SETUP + conds + f"""
if warp == 0:
{producer}
    if prims.elect_sync():
        prims.mbarrier_arrive(full.subview(0))
else:
    phase = cutlass.Int32({start})
{consumer}
    while not prims.mbarrier_try_wait_parity(full.subview(0), phase):
        pass
""")


def test_a_parity_past_the_term_size_limit_still_splits_on_its_conditions(require_spin):
    src = phase_over_many_uniform_branches()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 32, len(m.configs)  # each of the five conditions a configuration
    assert check(src).verdict == "verified"
    r = check(phase_over_many_uniform_branches(start=1))
    assert r.verdict == "counterexample" and any(f.code == "CS101" for f in r.findings), r.reason


FROST_BARRIER = """
from dataclasses import dataclass, replace

RING, OTHER = 2, 7


def checked_stages(n):
    try:
        import importlib.metadata
        probe = importlib.metadata.version("nvidia-cutlass-dsl")
    except Exception:
        probe = None
    if n < 1:
        raise ValueError("a ring needs a stage")
    return n


@dataclass(frozen=True)
class Ring:
    base_ptr: object
    stages: int
    stage_idx: object = 0

    def __getitem__(self, i):
        return replace(self, stage_idx=i)

    @property
    def smem_ptr(self):
        return self.base_ptr.subview(self.stage_idx)

    def init(self, count):
        from cutlass.experimental import primitives as p
        p.mbarrier_init(self.smem_ptr, count)

    def wait(self, phase):
        while not prims.mbarrier_try_wait_parity(self.smem_ptr, phase):
            pass

    def arrive(self):
        prims.mbarrier_arrive(self.smem_ptr)
"""


def frost_barrier_ring(consumer_parity: str = "(k // RING) & 1") -> str:
    """cuDNN frost's barrier objects: a frozen dataclass indexed through `__getitem__` (a
    `dataclasses.replace` copy), its address a property, a helper importing the primitives
    locally, the stage count a tuple-assigned module constant checked by a helper that probes
    package metadata in a `try` and raises on a bad count."""
    return kernel(f"""\
def alloc(n):
    return cutlass.Array(cutlass.Int64, n, space=SMEM)
full = Ring(alloc(RING), checked_stages(mA.shape[1]))
empty = Ring(alloc(RING), checked_stages(RING))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if prims.elect_sync():
        for i in cutlass.range_constexpr(RING):
            full[i].init(1)
            empty[i].init(1)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
n = mA.shape[0]
if warp == 0:
    for k in cutlass.range(n):
        empty[k % RING].wait(((k // RING) & 1) ^ 1)
        if prims.elect_sync():
            full[k % RING].arrive()
else:
    for k in cutlass.range(n):
        full[k % RING].wait({consumer_parity})
        if prims.elect_sync():
            empty[k % RING].arrive()
""", top=FROST_BARRIER)


def test_frost_barrier_objects_are_followed_to_their_ring(require_spin):
    src = frost_barrier_ring()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    names = {op.bar.name for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.MbWait)}
    assert len(names) == 4, names  # two rings of two stages: the helper's two allocations differ
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert any("takes the side that traces" in a and "raises" in a for a in r.assumptions), r.assumptions


def test_frost_barrier_objects_with_a_wrong_parity_deadlock(require_spin):
    r = check(frost_barrier_ring(consumer_parity="((k // RING) & 1) ^ 1"))
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS101" for f in r.findings), [f.message for f in r.findings]


def frost_named_tuple_bars(consumer_parity: str = "(k // RING) & 1") -> str:
    """cuDNN frost's SDPA backward: the barrier rings in a `NamedTuple`, initialized by index
    (`bars[i][stage].init()` over `len(bars)`), read by field, by unpacking and by iteration."""
    return kernel(f"""\
def alloc(n):
    return cutlass.Array(cutlass.Int64, n, space=SMEM)
bars = Bars(Ring(alloc(RING), RING), Ring(alloc(RING), RING))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if prims.elect_sync():
        for i in cutlass.range_constexpr(len(bars)):
            for stage in cutlass.range_constexpr(bars[i].stages):
                bars[i][stage].init(1)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
n = mA.shape[0]
full, empty = bars
if warp == 0:
    for k in cutlass.range(n):
        bars[-1][k % RING].wait(((k // RING) & 1) ^ 1)
        if prims.elect_sync():
            full[k % RING].arrive()
else:
    for k in cutlass.range(n):
        for ring in bars:
            if ring.base_ptr is not empty.base_ptr:
                ring[k % RING].wait({consumer_parity})
        if prims.elect_sync():
            bars.empty[k % RING].arrive()
""", top="from typing import NamedTuple\n" + FROST_BARRIER + NAMED_TUPLE_BARS)


NAMED_TUPLE_BARS = "\n\nclass Bars(NamedTuple):\n    full: Ring\n    empty: Ring\n"


def test_barrier_rings_in_a_named_tuple_are_followed_by_index(require_spin):
    src = frost_named_tuple_bars()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    inits = [op for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.MbInit)]
    assert len(inits) == 4, inits  # two rings of two stages, each initialized through `bars[i][stage]`
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert check(frost_named_tuple_bars(consumer_parity="((k // RING) & 1) ^ 1")).verdict == "counterexample"


def test_a_try_statement_around_synchronization_is_unmodeled():
    src = kernel(RING_SETUP + """\
try:
    prims.mbarrier_arrive(full.subview(0))
except Exception:
    pass
""")
    assert any(u.construct == "try statement" for u in model(src).unmodeled)


def test_a_barrier_method_on_an_object_not_followed_is_unmodeled_not_skipped():
    src = kernel(RING_SETUP + """\
bar = make_barrier_somehow(full)
bar.arrive()
bar.wait(0)
""")
    found = {u.construct for u in model(src).unmodeled}
    assert {".arrive(...)", ".wait(...)"} <= found, found


def test_typed_pointer_views_name_the_memory_they_wrap(require_spin):
    src = kernel(RING_SETUP + """\
typed = Pointer(full.data_ptr(), dtype=cutlass.Int64)
generic = typed.tospace(cutlass.AddressSpace.generic)
if warp == 0:
    if prims.elect_sync():
        prims.mbarrier_arrive(generic)
else:
    while not prims.mbarrier_try_wait_parity(full.subview(0), 0):
        pass
""", top="from cutlass.base_dsl.typing import Pointer\n")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert check(src).verdict == "verified"


def credit_arrive(init_count: int = 2) -> str:
    """frost's scheduler credit: one predicated inline-PTX arrive per warp whose lanes 0 and 16
    each land on a different CTA of the pair, through a per-lane `mapa`."""
    return HEAD + f"""

class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        bar = cutlass.Array(cutlass.Int64, 1, space=SMEM)
        if prims.elect_sync():
            prims.mbarrier_init(bar.subview(0), {init_count})
        prims.fence_mbarrier_init()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        lane = cute.arch.thread_idx()[0] & cutlass.Int32(31)
        peer = lane >> cutlass.Int32(4)
        pred = ((lane & cutlass.Int32(15)) == cutlass.Int32(0)) & (peer < cutlass.Int32(2))
        peer_mb = prims.mapa(bar.subview(0), peer)
        prims.inline_ptx("mbarrier.arrive.release.cta.shared::cluster.b64 _, [{{$r0}}];", read_only_args=[peer_mb],
                         predicate=pred)
        while not prims.mbarrier_try_wait_parity(bar.subview(0), 0):
            pass
"""


def test_a_per_lane_mapa_credit_arrive_lands_once_on_each_cta(require_spin):
    src = credit_arrive()
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    arrives = [(op.bar.name, op.count) for p in m.processes for op in ir.walk(p.variants[-1])
               if isinstance(op, ir.MbArrive)]
    assert len(arrives) == 4 and all(c == 1 for _, c in arrives), arrives  # 2 warps x 2 peers, one lane each
    assert check(src).verdict == "verified"


def test_a_credit_count_above_the_arrivals_deadlocks(require_spin):
    r = check(credit_arrive(init_count=3))
    assert r.verdict == "counterexample" and any(f.code == "CS101" for f in r.findings), r.reason


VERSIONED_DESC = """
from cutlass._mlir.dialects import llvm
from cutlass.cute.arch.nvvm_wrappers import inline_ptx
from cutlass.experimental.primitives import nvvm_wrapper as _nvvm_wrap


def _desc(base):
    # cuDNN frost's Rubin descriptor: the versioned intrinsic on the address shifted to 16-byte
    # granules, hidden from LLVM by an identity `mov` (`desc_opaque`).
    addr = cutlass.Int32(llvm.ptrtoint(cutlass.Int32.mlir_type, base.ir_value()))
    raw = prims.Tcgen05SmemDesc(_nvvm_wrap._tcgen05_mma_smem_desc_v2(addr >> cutlass.Int32(4), 1, 64, 1, 0, 0, 0, 0))
    return inline_ptx("mov.b64 $0, $1;", write_only_types=[type(raw)], read_only_args=[raw])
"""


def test_a_versioned_descriptor_behind_an_identity_mov_reads_its_buffer(require_spin):
    for commit_before_mma, verdict in ((False, "verified"), (True, "counterexample")):
        src = mma_pipeline(commit_before_mma).replace(
            '\n\ndef _desc(addr):\n    return prims.Tcgen05SmemDesc.build(start_address=addr, leading_byte_offset=16, '
            'stride_byte_offset=1024, layout=0)\n', VERSIONED_DESC)
        assert "_tcgen05_mma_smem_desc_v2" in src
        m = model(src)
        assert not m.unmodeled, m.unmodeled
        reads = {op.region.name for p in m.processes for op in ir.walk(p.variants[-1])
                 if isinstance(op, (ir.Access, ir.AsyncRead)) and not getattr(op, "write", False)
                 and op.region.space == "smem"}
        assert any(name.startswith("bufs") for name in reads), reads
        assert check(src).verdict == verdict


def test_a_positional_array_over_a_pointer_is_a_view_of_that_memory():
    # `cutlass.Array(sK.data_ptr(), shape=n, dtype=dt)` (cuDNN's dV staging aliasing sK): the
    # pointer's buffer, not a call handed a buffer.
    src = kernel(RING_SETUP + """\
sK = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
sdV = cutlass.Array(sK.data_ptr(), shape=2048, dtype=cutlass.Float32)
if warp == 0:
    prims.store_ext(cutlass.Float32(1.0), sdV.subview(0), shared_space=prims.SharedSpace.shared_cta)
    if prims.elect_sync():
        prims.mbarrier_arrive(full.subview(0))
else:
    while not prims.mbarrier_try_wait_parity(full.subview(0), 0):
        pass
    v = sK.subview(0).load()
""")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    names = {op.region.name.split("[")[0].split(" ")[0] for p in m.processes for op in ir.walk(p.variants[-1])
             if isinstance(op, ir.Access)}
    assert names == {"sK"}, names


def test_a_plain_arrive_after_the_mma_releases_operands_still_being_read(require_spin):
    # The MMA reads its SMEM operands until a tcgen05_commit signals it is done; an
    # mbarrier_arrive right after issuing it lets the producer's next TMA load overwrite them.
    src = mma_pipeline().replace("prims.tcgen05_commit(empty.subview(s), group=prims.CTAGroup.CTA_1)",
                                 "prims.mbarrier_arrive(empty.subview(s))")
    assert "tcgen05_commit" not in src
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line == line_of(src, "cp_async_bulk_tensor_shared_cta_global"), race.message
    assert "tcgen05 MMA reading it may not be done" in race.message


INTTOPTR = "cutlass.inttoptr((row << 16) | col, 6, cutlass.Float32)"


def allocated_accumulators(epilogue_stage: str = "s", mma: str = "plain", address: str = INTTOPTR) -> str:
    """frost's TMEM addressing: the MMA warp (warp 1) allocates with `tcgen05_alloc`, every warp
    loads the address from its shared-memory word, and two accumulator stages lie `s * 128`
    columns on from its column part; the epilogue warp (warp 0, interpreted first) reads stage
    `epilogue_stage` through `address` (of `row` and `col`)."""
    call = ("prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, base + s * 128, sa, sa, idesc, k > 0)"
            if mma == "plain" else
            "prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, [base, base + 128][mA.shape[1] % 2], "
            "sa, sa, idesc, k > 0)" if mma == "picked" else
            "prims.tcgen05_mma_block_scale(prims.Tcgen05MMAKind.MXF8F6F4, prims.CTAGroup.CTA_1, base + s * 128, "
            "sa, sa, idesc, k > 0, base + 256, base + 260)")
    return kernel(f"""\
holder = cutlass.Array(cutlass.Int32, 1, space=SMEM)
acc_full = cutlass.Array(cutlass.Int64, 2, space=SMEM)
acc_empty = cutlass.Array(cutlass.Int64, 2, space=SMEM)
sa = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
idesc = prims.Tcgen05InstrDesc.build(m=128, n=128)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 1:
    if prims.elect_sync():
        for i in cutlass.range_constexpr(2):
            prims.mbarrier_init(acc_full.subview(i), 1)
            prims.mbarrier_init(acc_empty.subview(i), 1)
    prims.tcgen05_alloc(holder, 512)
prims.fence_mbarrier_init()
prims.barrier_cta_sync(0)
raw = holder.load()
base = raw & 0xFFFF
row = raw >> 16
n = mA.shape[0]
if warp == 1:
    for k in cutlass.range(n):
        s = k % 2
        while not prims.mbarrier_try_wait_parity(acc_empty.subview(s), ((k // 2) & 1) ^ 1):
            pass
        if prims.elect_sync():
            {call}
            prims.tcgen05_commit(acc_full.subview(s))
else:
    for k in cutlass.range(n):
        s = k % 2
        while not prims.mbarrier_try_wait_parity(acc_full.subview(s), (k // 2) & 1):
            pass
        col = base + ({epilogue_stage}) * 128
        v = prims.tcgen05_ld("32x32b", {address}, num=32)
        prims.tcgen05_wait(prims.Tcgen05Wait.LOAD)
        if prims.elect_sync():
            prims.mbarrier_arrive(acc_empty.subview(s))
""")


def tmem_labels(src: str) -> set:
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    return {op.region.name for p in m.processes for v in p.variants for op in ir.walk(v)
            if isinstance(op, ir.Access) and op.region.space == "tmem"}


def test_the_allocated_tmem_address_plus_columns_names_each_accumulator_stage(require_spin):
    src = allocated_accumulators()
    labels = tmem_labels(src)
    assert len(labels) == 2, labels  # the stages at columns 0 and 128, not the whole TMEM
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert not any("raw TMEM pointer" in a for a in r.assumptions), r.assumptions


def test_reading_the_stage_the_mma_writes_is_a_race_on_those_columns(require_spin):
    src = allocated_accumulators(epilogue_stage="(s + 1) % 2")
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert "TMEM+128" in race.message or "TMEM (" in race.message, race.message


def test_a_block_scaled_mma_at_known_columns_reads_its_scale_factors_there(require_spin):
    src = allocated_accumulators(mma="block_scale")
    labels = tmem_labels(src)
    assert len(labels) == 4, labels  # two accumulator stages and the two scale-factor columns
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert not any("scale-factor reads are taken as covered" in a for a in r.assumptions), r.assumptions


def test_a_row_and_column_tmem_address_of_the_allocation_names_those_columns(require_spin):
    # QSA's form: `TmemAddr.from_row_col(row0 + 32 * quarter, col0 + offset).as_ptr(dtype)`.
    src = allocated_accumulators(address="prims.TmemAddr.from_row_col(row + 32, col).as_ptr(cutlass.Float32)")
    assert len(tmem_labels(src)) == 2
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


SUBVIEW = "prims.make_tmem_ptr(raw, cutlass.Int8).subview(({stage}) * 128)"


def test_a_subview_of_the_allocated_tmem_pointer_names_the_columns_it_moves_to(require_spin):
    # frost's `tmem_raw = make_tmem_ptr(tmem_ptr_i32.load(), dtype)`, then `tmem_raw.subview(LAYOUT.S0_OFF)`.
    src = allocated_accumulators(address=SUBVIEW.format(stage="s"))
    assert len(tmem_labels(src)) == 2  # the two stages, not the whole tensor memory
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert not any("raw TMEM pointer" in a for a in r.assumptions), r.assumptions
    race = check(allocated_accumulators(address=SUBVIEW.format(stage="(s + 1) % 2")))
    assert race.verdict == "counterexample", race.reason
    assert [f.code for f in race.findings] == ["CS201"] and not race.findings[0].possible


@pytest.mark.parametrize("address", [
    SUBVIEW.format(stage="mA.shape[1]"),  # columns that do not fold
    SUBVIEW.replace("Int8", "Float32").format(stage="s"),  # a wider element: its step is not taken as a column
], ids=["unknown-columns", "float32-pointer"])
def test_other_subviews_are_somewhere_in_tmem(address):
    labels = tmem_labels(allocated_accumulators(address=address))
    assert any("TMEM+?" in name for name in labels), labels


def test_an_allocation_address_picked_at_an_unknown_index_is_somewhere_in_tmem(require_spin):
    src = allocated_accumulators(mma="picked")
    labels = tmem_labels(src)  # modeled: no "sequence of buffers at an index that does not fold"
    assert any("TMEM+?" in name for name in labels), labels
    r = check(src)
    assert r.verdict == "inconclusive" and all(f.possible for f in r.findings), (r.verdict, r.reason)
    assert any("raw TMEM pointer" in a for a in r.assumptions), r.assumptions


LANE_READ = """\
holder = cutlass.Array(cutlass.Int32, 1, space=SMEM)
sa = cutlass.Array(cutlass.Float16, 4096, space=SMEM)
idesc = prims.Tcgen05InstrDesc.build(m=128, n=64)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    prims.tcgen05_alloc(holder, 128)
prims.barrier_cta_sync(0)
raw = holder.load()
col = raw & 0xFFFF
row = raw >> 16
if warp == 0:
    if prims.elect_sync():
        prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, col, sa, sa, idesc, 0)
else:
    v = prims.tcgen05_ld("32x32b", @ADDR@, num=32)
    prims.tcgen05_wait(prims.Tcgen05Wait.LOAD)
"""


def test_a_read_at_other_lanes_of_the_columns_an_mma_writes_is_a_possible_race(require_spin):
    # Lanes are not tracked: `((row + 32) << 16) | col` (warp 1's lane quarter) is col at other
    # lanes, which the MMA writes too; the race is reported, as possible only (P16).
    r = check(kernel(LANE_READ.replace("@ADDR@", "((row + 32) << 16) | col")))
    assert r.verdict == "inconclusive", (r.verdict, r.reason)
    assert [f.code for f in r.findings] == ["CS201"] and r.findings[0].possible
    exact = check(kernel(LANE_READ.replace("@ADDR@", "col")))
    assert exact.verdict == "counterexample" and not exact.findings[0].possible, (exact.verdict, exact.reason)
