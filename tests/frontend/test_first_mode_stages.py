"""Views staged on their first mode (cuDNN's causal conv1d backward, vec2 cp.async variant).

`make_tensor(raw.iterator, make_layout((STAGES, ROWS, COLS), stride=(ROWS * COLS, COLS, 1)))` over
a rank-1 allocation: each index of the first mode is its own range of elements, so a copy into
stage i and a read of stage j != i never meet. Taken whole, the read of one stage raced with the
copy in flight into the next (a false alarm the corpus showed).
"""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SETTINGS = Settings(verify_fixes=False)

# A ring of 4 stages of 8 x 32 floats: one warp per row pair copies stage `next` with cp.async
# while every thread reads stage `cur`; `wait_group(2)` + the barrier make stage `cur` complete
# and end the reads of the stage the next refill overwrites.
KERNEL = '''
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class Ring:
    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32):
        self.kernel(mX, mY, n).launch(grid=(1, 1, 1), block=(128, 1, 1))

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        raw = smem.allocate_tensor(cutlass.Float32, cute.make_layout(1024), byte_alignment=16)
        ring = cute.make_tensor(raw.iterator, cute.make_layout((4, 8, 32), stride=(256, 32, 1)))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        row = tidx // 32
        col = tidx % 32
        for stage in cutlass.range_constexpr(3):
            cute.copy(atom, mX[(stage, row, col, None)], ring[(stage, row, col, None)])
            cute.copy(atom, mX[(stage, row + 4, col, None)], ring[(stage, row + 4, col, None)])
            cute.arch.cp_async_commit_group()
        cur = cutlass.Int32(0)
        nxt = cutlass.Int32(3)
        for i in cutlass.range(n, unroll=1):
            cute.arch.cp_async_wait_group(2)
            cute.arch.barrier()
            mY[(i, tidx)] = ring[(cur, 7 - row, 31 - col)]
            cute.copy(atom, mX[(i + 3, row, col, None)], ring[(nxt, row, col, None)])
            cute.copy(atom, mX[(i + 3, row + 4, col, None)], ring[(nxt, row + 4, col, None)])
            cute.arch.cp_async_commit_group()
            cur = cur + 1
            if cur == 4:
                cur = cutlass.Int32(0)
            nxt = nxt + 1
            if nxt == 4:
                nxt = cutlass.Int32(0)
'''


def check(src):
    (k,) = api.check_source(src, "ring.py", SETTINGS, with_fixes=False).kernels
    return k


def test_each_index_of_the_first_mode_is_a_stage_region():
    k = build_models(KERNEL, "ring.py", Settings())[0]
    names = {op.region.name for p in k.processes for v in p.variants for op in ir.walk(v)
             if isinstance(op, ir.CpAsyncCopy)}
    assert {"raw[stage 0] (CTA 0)", "raw[stage 1] (CTA 0)", "raw[stage 2] (CTA 0)", "raw[stage 3] (CTA 0)"} <= names


def test_the_ring_that_waits_and_syncs_before_each_stage_is_verified(require_spin):
    k = check(KERNEL)
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


def test_reading_a_stage_before_its_copies_complete_is_a_race(require_spin):
    # wait_group(3) leaves the group that fills stage `cur` in flight.
    k = check(KERNEL.replace("cp_async_wait_group(2)", "cp_async_wait_group(3)"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert {f.code for f in k.findings} == {"CS201"}


def _copy_regions(src):
    k = build_models(src, "ring.py", Settings())[0]
    return {op.region.name for p in k.processes for v in p.variants for op in ir.walk(v)
            if isinstance(op, ir.CpAsyncCopy)}


def test_a_view_staged_another_way_makes_the_first_mode_views_whole():
    # The same allocation also staged on the last mode of another view, or on the first mode
    # with another stride: one stage number would name different elements, so the first-mode
    # views are taken whole (a race may be found, none is missed between two numberings).
    for other, read, regions in (
            # staged on its last mode: the copies also touch the stage that view names (split_stages)
            ("cute.make_layout((256, 4))", "other[(None, 1)][tidx]", {"raw (CTA 0)", "raw[stage 1] (CTA 0)"}),
            # another first-mode numbering: both are taken whole
            ("cute.make_layout((2, 512), stride=(512, 1))", "other[(1, tidx)]", {"raw (CTA 0)"})):
        extra = (f"        other = cute.make_tensor(raw.iterator, {other})\n"
                 f"        mY[(0, tidx)] = {read}\n")
        src = KERNEL.replace("        atom = cute.make_copy_atom", extra + "        atom = cute.make_copy_atom", 1)
        assert _copy_regions(src) == regions, other
