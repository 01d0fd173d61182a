"""Per-thread vectors through raw shared-memory pointers, as cuDNN's norm kernels stage them.

`nvvm.load_ext(buf.iterator + (tid + k * BT) * V, dtype=t, count=V)` loads V elements of the
buffer's own type in each lane; `store_ext` of such a vector writes them back. Each lane names
its own elements, so warps that only ever touch their own never race, however many 32-element
blocks the vectors span. The launcher passes the block size on to the kernel (`block=(BT, 1, 1)`
with `BT` a Constexpr argument), so the block the model takes is `BT` in the kernel too. Long
`while` loops that only load and store are checked as one trip, like long `for` loops.
"""
import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of

NORM = """\
import cutlass
import cutlass.cute as cute
import cutlass.experimental.primitives as nvvm
from cutlass.utils import SmemAllocator

_CTA_SS = 3


@cute.kernel
def stage_rows(mX: cute.Tensor, R: cutlass.Int32, BT: cutlass.Constexpr, V: cutlass.Constexpr,
               VPT: cutlass.Constexpr, it_ty: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    smem = SmemAllocator()
    sx = smem.allocate_tensor(BUF_TYPE, cute.make_layout(VPT * BT * V), byte_alignment=16)
    acc = cutlass.Float32(0.0)
    for e in cutlass.range_constexpr(V):
        acc = acc + 1.0
    row = 0
    while row < R:
        for k in cutlass.range_constexpr(VPT):
            rx = nvvm.load_ext(mX.iterator + (tid + k * BT) * V, dtype=it_ty, count=V)
            nvvm.store_ext(rx, sx.iterator + (tid + k * BT) * STRIDE, shared_space=_CTA_SS)
        nvvm.barrier_cta_sync_aligned(0)
        for k in cutlass.range_constexpr(VPT):
            xv = nvvm.load_ext(sx.iterator + (tid + k * BT) * STRIDE, dtype=it_ty, count=V, shared_space=_CTA_SS)
        row = row + 1


@cute.jit
def launch(mX: cute.Tensor, R: cutlass.Int32, BT: cutlass.Constexpr, V: cutlass.Constexpr,
           VPT: cutlass.Constexpr, it_ty: cutlass.Constexpr):
    stage_rows(mX, R, BT, V, VPT, it_ty).launch(grid=(1, 1, 1), block=(BT, 1, 1))
"""


def norm(buf_type: str = "it_ty", stride: str = "V") -> str:
    return NORM.replace("BUF_TYPE", buf_type).replace("STRIDE", stride)


def check(src: str):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def smem_accesses(m, warp=None) -> list:
    return [op for p in m.processes for v in p.variants for op in ir.walk(v)
            if isinstance(op, ir.Access) and op.region.space == "smem" and warp in (None, p.warp)]


def test_the_block_size_argument_of_a_launching_function_is_the_models_block():
    [m] = build_models(norm(), "k.py", Settings())
    assert not m.unmodeled, [u.why for u in m.unmodeled]
    assert any(a.startswith("host argument BT = 128: the launch's block is computed from it") for a in m.assumptions), \
        m.assumptions


def test_vectors_of_the_buffers_type_name_their_elements_in_each_lane():
    [m] = build_models(norm(), "k.py", Settings())
    accesses = smem_accesses(m)
    assert accesses and all(op.exact for op in accesses)
    # Warp 0's vectors and warp 1's are different elements: no region is shared between them.
    regions = {w: {op.region.index for op in smem_accesses(m, w)} for w in (0, 1)}
    assert regions[0] and regions[1] and not regions[0] & regions[1]


def test_per_lane_vectors_over_many_blocks_verify(require_spin):
    # 128 threads x V elements x VPT: more than 16 blocks of 32 elements, but each warp's vectors
    # are read back by the same warp only: a handful of atoms, no race.
    kr = check(norm())
    assert kr.verdict == "verified", (kr.reason, [f.message for f in kr.findings])


def test_overlapping_vectors_of_two_warps_race(require_spin):
    # A stride of 1 with V elements per lane: lane 31 of warp 0 and lane 0 of warp 1 write the
    # same elements, and the second loop's reads of another warp's writes are ordered only by
    # the barrier, but the next row's writes are not ordered after them.
    src = norm(stride="1")
    kr = check(src)
    assert kr.verdict == "counterexample", kr.reason
    assert {f.code for f in kr.findings} == {"CS201"}
    assert {f.span.line for f in kr.findings} <= {line_of(src, "nvvm.store_ext("), line_of(src, "xv = nvvm.load_ext(")}


def test_a_vector_of_another_type_than_the_buffers_is_the_whole_buffer():
    # Int32 vectors through a Float16 buffer cover twice the elements the offset counts: not
    # tracked by element, inexact (P16).
    [m] = build_models(norm(buf_type="cutlass.Float16"), "k.py", Settings())
    stores = [op for op in smem_accesses(m) if op.write]
    assert stores and not any(op.exact for op in stores)


LONG_WHILE = """\
import cutlass
import cutlass.cute as cute
from cutlass.utils import SmemAllocator


@cute.kernel
def partials(mP: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    smem = SmemAllocator()
    sv = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4096), byte_alignment=16)
    sv[tid] = mP[tid]
    cute.arch.sync_threads()
    if tid < 8:
        ts = cutlass.Float32(0.0)
        j = cutlass.Int32(0)
        while j < 4096:
            ts = ts + sv[j]
            j = j + 1
        mP[tid] = ts


@cute.jit
def launch(mP: cute.Tensor):
    partials(mP).launch(grid=(1, 1, 1), block=(128, 1, 1))
"""


def test_a_long_while_loop_that_only_loads_is_checked_as_one_trip(require_spin):
    [m] = build_models(LONG_WHILE, "k.py", Settings())
    assert not m.unmodeled, [u.why for u in m.unmodeled]
    line = line_of(LONG_WHILE, "while j < 4096")
    assert any(a.startswith(f"loop at line {line} (more than") for a in m.assumptions), m.assumptions
    kr = check(LONG_WHILE)
    assert kr.verdict == "verified", kr.reason


@pytest.mark.parametrize("sync", ["", "cute.arch.sync_threads()"])
def test_a_long_while_loop_keeps_its_race_or_its_order(require_spin, sync):
    # Without the barrier the loop's reads race with the writes above it: one trip at an unknown
    # index still reads every element.
    src = LONG_WHILE.replace("    cute.arch.sync_threads()\n", f"    {sync}\n" if sync else "")
    kr = check(src)
    assert kr.verdict == ("verified" if sync else "counterexample"), kr.reason
