"""A wgmma is one operation of the whole warpgroup (P12): a warp's `wait_group` returns once its
peers have issued the retired groups too, and it orders their share of the operand reads."""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

MMA = """\
smem = cutlass.utils.SmemAllocator()
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 16)), byte_alignment=128)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
mma = cute.make_tiled_mma(cute.nvgpu.warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16)))
thr = mma.get_slice(tidx)
tCrA = mma.make_fragment_A(thr.partition_A(sA))
acc = cute.make_fragment(thr.partition_shape_C((64, 64)), cutlass.Float32)
sA[tidx] = cutlass.Float16(1.0)
cute.arch.fence_view_async_shared()
cute.arch.sync_threads()
cute.nvgpu.warpgroup.fence()
cute.gemm(mma, acc, tCrA[(None, None, 0)], tCrA[(None, None, 0)], acc)
cute.nvgpu.warpgroup.commit_group()
"""


def _check(body: str):
    src = kernel_source(MMA + body, threads=128)
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert fr.error is None
    return src, fr.kernels[0]


def test_a_warp_that_rewrites_an_operand_after_its_own_wait_group_is_ordered_after_its_peers(require_spin):
    # Warp 0 rewrites sA with no barrier with warps 1-3. Their share of the wgmma reads sA too,
    # but warp 0's wait_group returns only once the whole warpgroup's MMA is done; before it the
    # peers must have issued theirs (else the rewrite would come before their read).
    _, kr = _check("""\
cute.nvgpu.warpgroup.wait_group(0)
if warp_idx == 0:
    sA[tidx] = cutlass.Float16(2.0)
""")
    assert kr.verdict == "verified", (kr.reason, [f.message for f in kr.findings])


def test_rewriting_an_operand_before_the_wait_group_is_still_a_race(require_spin):
    src, kr = _check("""\
if warp_idx == 0:
    sA[tidx] = cutlass.Float16(2.0)
cute.nvgpu.warpgroup.wait_group(0)
""")
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS201", line_of(src, "Float16(2.0)"))]


def test_a_wait_group_that_leaves_the_group_in_flight_orders_no_peer_read(require_spin):
    src, kr = _check("""\
cute.nvgpu.warpgroup.wait_group(1)
if warp_idx == 0:
    sA[tidx] = cutlass.Float16(2.0)
cute.nvgpu.warpgroup.wait_group(0)
""")
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS201", line_of(src, "Float16(2.0)"))]


def test_a_warp_outside_the_warpgroup_gets_no_ordering_from_its_wait_group(require_spin):
    # Warps 4-7 are a second warpgroup: its MMAs are other operations, which warp 0's wait does
    # not retire, so its rewrite races with their reads.
    src = kernel_source(MMA + """\
cute.nvgpu.warpgroup.wait_group(0)
if warp_idx == 0:
    sA[tidx] = cutlass.Float16(2.0)
""", threads=256)
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "counterexample"
    assert {(f.code, f.span.line) for f in kr.findings} == {("CS201", line_of(src, "Float16(2.0)"))}


def test_a_wait_does_not_hang_on_a_peer_that_exited_without_the_group(require_spin):
    # Warp 0 issues a second group that the other warps never issue (on the GPU the warpgroup
    # would be out of step); their exit ends the wait rather than a deadlock of the model's own.
    _, kr = _check("""\
if warp_idx == 0:
    cute.gemm(mma, acc, tCrA[(None, None, 0)], tCrA[(None, None, 0)], acc)
    cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(0)
""")
    assert kr.verdict == "verified", (kr.reason, [f.message for f in kr.findings])


def test_a_wait_does_not_order_a_peers_read_of_a_later_group(require_spin):
    # Warps 1-3 read sA again in a second group that warp 0 never waits for (on the GPU a
    # warpgroup out of step): warp 0's wait retires the first group only, so its rewrite races
    # with their second read.
    src, kr = _check("""\
if warp_idx != 0:
    cute.gemm(mma, acc, tCrA[(None, None, 0)], tCrA[(None, None, 0)], acc)
    cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(warp_idx != 0)
if warp_idx == 0:
    sA[tidx] = cutlass.Float16(2.0)
""")
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS201", line_of(src, "Float16(2.0)"))]
