# cutespin-expect: kernel=SharedTileTwoConsumers.kernel verdict=verified
"""One TMA-loaded tile, two kinds of consumers: ``PipelineTmaMultiConsumersAsync`` (as in mamba2_ssd).

Warp 0 loads a tile per stage (``producer_acquire`` arms ``full[s]`` with the tile bytes). Warp 1
is the MMA warp: it waits, issues its MMA on the tile and releases with the default op type
(one ``tcgen05.commit`` on ``empty[s]``). Warp 2 reads the tile with ordinary loads and releases
with ``consumer_release(state, PipelineOp.AsyncThread)``: its group is counted in threads
(``Agent.Thread, 32``), so every lane arrives. ``empty[s]`` expects 1 + 32 arrivals per phase.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync


class SharedTileTwoConsumers:
    def __init__(self):
        self.tile = 64
        self.stages = 2
        self.tile_bytes = self.tile * self.tile * 2

    @cute.jit
    def __call__(self, mA: cute.Tensor, mOut: cute.Tensor):
        smem_layout = cute.make_layout((self.tile, self.tile), stride=(self.tile, 1))
        tma_a, tA = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, smem_layout, (self.tile, self.tile))
        self.kernel(tma_a, tA, mOut).launch(grid=(1, 1, 1), block=(96, 1, 1))

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=2 * self.stages)
        staged = cute.make_layout((self.tile, self.tile, self.stages), stride=(self.tile, 1, self.tile * self.tile))
        sA = smem.allocate_tensor(cutlass.Float16, staged, byte_alignment=128)

        pipe = pipeline.PipelineTmaMultiConsumersAsync.create(
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group_umma=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group_async=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            tx_count=self.tile_bytes,
            barrier_storage=bars,
        )
        k_tiles = cute.size(mA, mode=[1]) // self.tile
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            for k in cutlass.range(k_tiles):
                pipe.producer_acquire(st)
                cute.copy(tma_a, mA[(None, st.count)], sA[(None, None, st.index)], tma_bar_ptr=pipe.producer_get_barrier(st))
                st.advance()
            pipe.producer_tail(st)
        elif warp_idx == 1:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            for k in cutlass.range(k_tiles):
                pipe.consumer_wait(st)
                cute.gemm(tiled_mma, acc, sA[(None, None, st.index)], sA[(None, None, st.index)], acc)
                pipe.consumer_release(st)
                st.advance()
        else:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            total = cutlass.Float32(0.0)
            for k in cutlass.range(k_tiles):
                pipe.consumer_wait(st)
                total = total + sA[None, None, st.index][lane, None].load().to(cutlass.Float32).reduce(cute.ReductionOp.ADD, 0.0, 0)
                pipe.consumer_release(st, pipeline.PipelineOp.AsyncThread)
                st.advance()
            mOut[lane] = total
