# cutespin-expect: kernel=PipelinedRowSum.kernel verdict=counterexample kinds=deadlock lines=83,92
"""Row sums of a (M, K) fp16 matrix through a 3-stage ``cutlass.pipeline.PipelineTmaAsync``.

The Hopper mainloop idiom without the MMA: warp 0 is the TMA producer, warps 1-2 consume.
  * producer: ``producer_acquire`` (waits ``empty[s]``, then its elected lane arms ``full[s]`` with
    the tile bytes), TMA copy onto ``producer_get_barrier``, ``producer_commit`` (a no-op for TMA
    pipelines), ``advance``; ``producer_tail`` at the end so the CTA does not exit while a
    release is still in flight;
  * consumers: ``consumer_wait``, read their row of the slot, ``consumer_release``, ``advance``.
BUG: the consumer group is sized per thread (``Agent.Thread, 64``), as for ``PipelineAsync``. But
with a cluster of one, ``PipelineTmaAsync.consumer_release`` arrives once per consumer *warp* (lane 0
is the only signalling thread), so ``empty[s]`` gets 2 of its 64 arrivals per phase: once the
producer has used every stage once, its ``producer_acquire`` waits forever.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync


class PipelinedRowSum:
    def __init__(self):
        self.tile_m = 64
        self.tile_k = 64
        self.num_stages = 3
        self.tile_bytes = self.tile_m * self.tile_k * 2
        self.num_consumer_warps = 2
        self.threads = 32 * (1 + self.num_consumer_warps)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mOut: cute.Tensor):
        a_layout = cute.make_layout((self.tile_m, self.tile_k), stride=(self.tile_k, 1))
        tma_atom_a, tma_tensor_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, a_layout, (self.tile_m, self.tile_k)
        )
        grid = (cute.ceil_div(cute.size(mA, mode=[0]), self.tile_m), 1, 1)
        self.kernel(tma_atom_a, tma_tensor_a, mOut).launch(
            grid=grid, block=(self.threads, 1, 1), cluster=(1, 1, 1)
        )

    @cute.kernel
    def kernel(self, tma_atom_a: cute.CopyAtom, mA_tma: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        # full[0..S) then empty[0..S), as the pipeline expects.
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_stages)
        sA = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout(
                (self.tile_m, self.tile_k, self.num_stages),
                stride=(self.tile_k, 1, self.tile_m * self.tile_k),
            ),
            byte_alignment=128,
        )

        producer_group = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        consumer_group = pipeline.CooperativeGroup(
            pipeline.Agent.Thread, 32 * self.num_consumer_warps
        )
        ab_pipeline = pipeline.PipelineTmaAsync.create(
            num_stages=self.num_stages,
            producer_group=producer_group,
            consumer_group=consumer_group,
            tx_count=self.tile_bytes,
            barrier_storage=barriers,
        )

        gA = cute.local_tile(mA_tma, (self.tile_m, self.tile_k), (bidx, None))
        k_tile_cnt = cute.size(gA, mode=[2])
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )

        if warp_idx == 0:
            producer_state = pipeline.make_pipeline_state(
                pipeline.PipelineUserType.Producer, self.num_stages
            )
            for k in cutlass.range(k_tile_cnt):
                ab_pipeline.producer_acquire(producer_state)
                cute.copy(
                    tma_atom_a,
                    tAgA[(None, producer_state.count)],
                    tAsA[(None, producer_state.index)],
                    tma_bar_ptr=ab_pipeline.producer_get_barrier(producer_state),
                )
                ab_pipeline.producer_commit(producer_state)
                producer_state.advance()
            ab_pipeline.producer_tail(producer_state)
        else:
            row = tidx - 32
            acc = cutlass.Float32(0.0)
            consumer_state = pipeline.make_pipeline_state(
                pipeline.PipelineUserType.Consumer, self.num_stages
            )
            for k in cutlass.range(k_tile_cnt):
                ab_pipeline.consumer_wait(consumer_state)
                vals = sA[None, None, consumer_state.index][row, None].load()
                acc = acc + vals.to(cutlass.Float32).reduce(cute.ReductionOp.ADD, 0.0, 0)
                ab_pipeline.consumer_release(consumer_state)
                consumer_state.advance()
            mOut[bidx * self.tile_m + row] = acc
