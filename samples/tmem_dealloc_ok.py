# cutespin-expect: kernel=TmemTile.kernel verdict=verified
"""One output tile through tensor memory (TMEM), freed only after every warp is done with it.

Four warps (128 threads). Warp 0 allocates 128 TMEM columns, issues the tcgen05 MMAs of the tile
into the accumulator and commits it with ``PipelineUmmaAsync`` (a ``tcgen05.commit`` that arrives
once the MMAs are done). Then all four warps wait for the accumulator, load their rows with a
tcgen05.ld copy (``cute.copy`` from TMEM into a register tensor) and convert the registers with
``.load()``: the values cannot be used before the load has landed, so reading the registers
waits for the load like ``fence_view_async_tmem_load()``.

Before warp 0 frees the columns, the four warps meet at named barrier 1: every load and every
MMA is over and ordered before the dealloc.

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05


@cute.struct
class SharedStorage:
    acc_barriers: cute.struct.MemRange[cutlass.Int64, 2]
    tmem_holding_buf: cutlass.Int32


class TmemTile:
    def __init__(self):
        self.threads = 128

    @cute.jit
    def __call__(self, tiled_mma: cute.TiledMma, tCrA: cute.Tensor, tCrB: cute.Tensor, mC: cute.Tensor):
        self.kernel(tiled_mma, tCrA, tCrB, mC).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tCrA: cute.Tensor, tCrB: cute.Tensor, mC: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        storage = utils.SmemAllocator().allocate(SharedStorage)
        acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.threads),
            barrier_storage=storage.acc_barriers.data_ptr(),
        ).make_participants()
        tmem = utils.TmemAllocator(storage.tmem_holding_buf.ptr,
                                   barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=self.threads))
        tmem.allocate(128)
        tmem.wait_for_alloc()
        tCtAcc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), tiled_mma.make_fragment_C((128, 128)).layout)
        t2r = tcgen05.make_tmem_copy(
            cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32), tCtAcc)
        tDtC = t2r.get_slice(tidx).partition_S(tCtAcc)
        rows = cute.make_rmem_tensor(tDtC[None, None, 0].shape, cutlass.Float32)

        if warp_idx == 0:
            acc_empty = acc_producer.acquire_and_advance()
            for k_block in cutlass.range_constexpr(4):
                cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k_block)], tCrB[(None, None, k_block)], tCtAcc)
            acc_empty.commit()

        tmem.relinquish_alloc_permit()
        acc_full = acc_consumer.wait_and_advance()
        for i in cutlass.range_constexpr(4):
            cute.copy(t2r, tDtC[None, None, i], rows)
            mC[i * self.threads + tidx] = rows.load()[0]
        acc_full.release()

        pipeline.sync(barrier_id=1)
        tmem.free(tCtAcc)
