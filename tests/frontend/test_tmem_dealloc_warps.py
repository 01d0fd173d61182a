"""TMEM freed by more than one warp.

cudnn's amax block-scaled GEMM allocates TMEM in the first epilogue warp only (`if warp_idx ==
self.epilog_warp_id[0]:`) but runs `dealloc_tmem` in all four epilogue warps. The model takes a
dealloc as a read and a write of all TMEM, so the second dealloc conflicts with the first; the
finding must name that (a double free), not a load or MMA still using the columns."""
from cutespin import api
from cutespin.config import Settings

from ..kernels import line_of

KERNEL = '''
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05


class K:
    # cutespin: block=128
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        tmem_holding_buf = smem.allocate_array(cutlass.Int32, 1)
        epilogue_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=128)
        if warp_idx == 0:
            cute.arch.alloc_tmem(256, tmem_holding_buf)
        epilogue_barrier.arrive_and_wait()
        tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, alignment=16,
                                               ptr_to_buffer_holding_addr=tmem_holding_buf)
        tAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C((128, 128)).layout)
        t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32),
                                                         cutlass.Float32), tAcc)
        tTR = t2r.get_slice(tidx).partition_S(tAcc)
        regs = cute.make_rmem_tensor((32,), cutlass.Float32)
        cute.copy(t2r, tTR, regs)
        cute.arch.fence_view_async_tmem_load()
        epilogue_barrier.arrive_and_wait()
        cute.arch.dealloc_tmem(tmem_ptr, 256)
'''

GUARDED = KERNEL.replace("        cute.arch.dealloc_tmem(tmem_ptr, 256)\n",
                         "        if warp_idx == 0:\n            cute.arch.dealloc_tmem(tmem_ptr, 256)\n")


def check(src):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_every_warp_deallocating_is_reported_as_a_double_free(require_spin):
    r = check(KERNEL)
    assert r.verdict == "counterexample"
    f = r.findings[0]
    assert f.code == "CS201" and f.span.line == line_of(KERNEL, "cute.arch.dealloc_tmem(")
    assert f.message.startswith("TMEM freed by more than one warp: warp ")
    assert "both run dealloc_tmem on the same allocation" in f.message
    assert "tcgen05.ld" not in f.message  # not the load-or-MMA-in-use message
    assert any(rel.message.startswith("the other dealloc: warp ") for rel in f.related)


def test_the_allocating_warp_alone_deallocating_is_verified(require_spin):
    r = check(GUARDED)
    assert r.verdict == "verified", [f.message for f in r.findings]


def test_one_dealloc_racing_a_load_is_not_called_a_double_free(require_spin):
    """Without the barrier after the loads, the single (guarded) dealloc races the other warps'
    tcgen05.ld (reported at the dealloc or at the load, whichever the search meets first): a
    use-before-free, never a double free."""
    src = GUARDED.replace("        cute.arch.fence_view_async_tmem_load()\n        epilogue_barrier.arrive_and_wait()\n",
                          "        cute.arch.fence_view_async_tmem_load()\n")
    r = check(src)
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"
    assert "more than one warp" not in r.findings[0].message
