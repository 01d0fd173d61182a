# cutespin-expect: kernel=TmemEpilogue.kernel verdict=counterexample kinds=race lines=85
"""BUG: tmem_load_fence_ok.py releasing the accumulator stage before waiting for its TMEM loads.

The epilogue releases the stage right after issuing the tcgen05.ld copy and only then calls
``fence_view_async_tmem_load()``. The release lets the MMA warp acquire the stage and start the
tile after next: its tcgen05 MMAs overwrite the accumulator while the loads may still read it
(write-after-read on TMEM, reported at the MMA that overwrites). The fix: the fence before the
release, as in tmem_load_fence_ok.py.

The original description of the correct kernel follows.

A Blackwell persistent GEMM's accumulator handoff through tensor memory (TMEM).

Warp 4 is the MMA warp: per tile it acquires an accumulator stage of a 2-stage
``PipelineUmmaAsync``, accumulates into that stage of TMEM with tcgen05 MMAs (``cute.gemm``)
and commits the stage (``producer_commit`` is a ``tcgen05.commit``, which arrives once the MMAs
are done). Warps 0-3 are the epilogue: they wait for the stage, load it into registers with a
tcgen05.ld copy (``cute.copy`` from TMEM), and release the stage so that the MMA warp can
accumulate the tile after next into it.

A tcgen05.ld is asynchronous: the registers are written after ``cute.copy`` returns, until
``cute.arch.fence_view_async_tmem_load()`` (``tcgen05.wait::ld``). The epilogue waits for its
loads before the release, so the next MMA cannot overwrite the accumulator they read.

At the end the epilogue warps and the MMA warp meet at a named barrier before warp 0 frees the
TMEM columns, so no load or MMA can still use them.

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05


@cute.struct
class SharedStorage:
    acc_barriers: cute.struct.MemRange[cutlass.Int64, 4]
    tmem_holding_buf: cutlass.Int32


class TmemEpilogue:
    def __init__(self):
        self.num_acc_stages = 2
        self.epilogue_warps = 4
        self.mma_warp = 4
        self.threads = 32 * (self.epilogue_warps + 1)

    @cute.jit
    def __call__(self, tiled_mma: cute.TiledMma, tCrA: cute.Tensor, tCrB: cute.Tensor, mC: cute.Tensor,
                 num_tiles: cutlass.Int32):
        self.kernel(tiled_mma, tCrA, tCrB, mC, num_tiles).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tCrA: cute.Tensor, tCrB: cute.Tensor, mC: cute.Tensor,
               num_tiles: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        storage = smem.allocate(SharedStorage)

        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            num_stages=self.num_acc_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.epilogue_warps),
            barrier_storage=storage.acc_barriers.data_ptr(),
        )
        tmem_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=self.threads)
        tmem = utils.TmemAllocator(storage.tmem_holding_buf.ptr, barrier_for_retrieve=tmem_barrier,
                                   allocator_warp_id=0)
        tmem.allocate(512)
        tmem.wait_for_alloc()
        tmem_ptr = tmem.retrieve_ptr(cutlass.Float32)
        acc_layout = tiled_mma.make_fragment_C(cute.append((128, 128), self.num_acc_stages)).layout
        tCtAcc_base = cute.make_tensor(tmem_ptr, acc_layout)

        if warp_idx == self.mma_warp:
            producer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_acc_stages)
            for tile in cutlass.range(num_tiles):
                tCtAcc = tCtAcc_base[(None, None, None, producer.index)]
                acc_pipeline.producer_acquire(producer)
                for k_block in cutlass.range_constexpr(4):
                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, k_block)], tCrB[(None, None, k_block)], tCtAcc)
                acc_pipeline.producer_commit(producer)
                producer.advance()
            acc_pipeline.producer_tail(producer)
        else:
            t2r_atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32)
            t2r = tcgen05.make_tmem_copy(t2r_atom, tCtAcc_base[(None, None, None, 0)])
            thr_t2r = t2r.get_slice(tidx)
            tTR_tAcc_base = thr_t2r.partition_S(tCtAcc_base)
            tTR_rAcc = cute.make_rmem_tensor(tTR_tAcc_base[(None, None, None, 0)].shape, cutlass.Float32)
            consumer = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_acc_stages)
            for tile in cutlass.range(num_tiles):
                acc_pipeline.consumer_wait(consumer)
                cute.copy(t2r, tTR_tAcc_base[(None, None, None, consumer.index)], tTR_rAcc)
                with cute.arch.elect_one():
                    acc_pipeline.consumer_release(consumer)  # BUG: the tcgen05.ld above may still read
                cute.arch.fence_view_async_tmem_load()
                consumer.advance()
                mC[tile * 128 + tidx] = tTR_rAcc[0]

        tmem_barrier.arrive_and_wait()
        tmem.relinquish_alloc_permit()
        tmem.free(tmem_ptr)
