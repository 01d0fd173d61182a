# cutespin-expect: kernel=WgmmaMainloop.kernel verdict=verified
"""A Hopper mainloop: one TMA producer warp feeds a warpgroup MMA (wgmma) consumer warpgroup.

Warps 0-3 form the MMA warpgroup, warp 4 issues the TMA loads of a 2-stage
``PipelineTmaAsync``. A wgmma reads its shared-memory operands asynchronously: the read goes on
after ``cute.gemm`` returns, until ``warpgroup.wait_group(N)`` retires the group that
``warpgroup.commit_group()`` closed. So the consumer keeps one MMA group in flight and releases
the *previous* stage only after ``wait_group(1)`` has retired the MMAs that read it; the last
stage is released after ``wait_group(0)``.

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync


class WgmmaMainloop:
    def __init__(self):
        self.tile = 64
        self.num_stages = 2
        self.stage_bytes = 2 * self.tile * self.tile * 2
        self.mma_warps = 4
        self.threads = 32 * (self.mma_warps + 1)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        tile_layout = cute.make_layout((self.tile, self.tile), stride=(self.tile, 1))
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, tile_layout,
                                                    (self.tile, self.tile))
        tma_b, gB_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mB, tile_layout,
                                                    (self.tile, self.tile))
        grid = (cute.ceil_div(cute.size(mC, mode=[0]), self.tile), 1, 1)
        self.kernel(tma_a, gA_tma, tma_b, gB_tma, mC).launch(grid=grid, block=(self.threads, 1, 1),
                                                          cluster=(1, 1, 1))

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               mC: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_stages)
        staged = cute.make_layout((self.tile, self.tile, self.num_stages),
                                  stride=(self.tile, 1, self.tile * self.tile))
        sA = smem.allocate_tensor(cutlass.Float16, staged, byte_alignment=128)
        sB = smem.allocate_tensor(cutlass.Float16, staged, byte_alignment=128)

        ab_pipeline = pipeline.PipelineTmaAsync.create(
            num_stages=self.num_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.mma_warps),
            tx_count=self.stage_bytes,
            barrier_storage=barriers,
        )

        gA = cute.local_tile(mA, (self.tile, self.tile), (bidx, None))
        gB = cute.local_tile(mB, (self.tile, self.tile), (0, None))
        k_tiles = cute.size(gA, mode=[2])
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2),
                                           cute.group_modes(gB, 0, 2))

        if warp_idx == self.mma_warps:
            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_stages)
            for k in cutlass.range(k_tiles):
                ab_pipeline.producer_acquire(prod)
                bar = ab_pipeline.producer_get_barrier(prod)
                cute.copy(tma_a, tAgA[(None, prod.count)], tAsA[(None, prod.index)], tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, prod.count)], tBsB[(None, prod.index)], tma_bar_ptr=bar)
                ab_pipeline.producer_commit(prod)
                prod.advance()
            ab_pipeline.producer_tail(prod)
        else:
            tiled_mma = cute.make_tiled_mma(cute.nvgpu.warpgroup.MmaF16BF16Op(
                cutlass.Float16, cutlass.Float32, (self.tile, self.tile, 16),
                cute.nvgpu.warpgroup.OperandSource.SMEM,
                cute.nvgpu.warpgroup.OperandMajorMode.K, cute.nvgpu.warpgroup.OperandMajorMode.K))
            thr_mma = tiled_mma.get_slice(tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_fragment(thr_mma.partition_shape_C((self.tile, self.tile)), cutlass.Float32)

            reading = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages)
            releasing = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages)
            for k in cutlass.range(k_tiles):
                ab_pipeline.consumer_wait(reading)
                cute.nvgpu.warpgroup.fence()
                cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, reading.index)],
                          tCrB[(None, None, 0, reading.index)], acc)
                cute.nvgpu.warpgroup.commit_group()
                # One group stays in flight: the MMAs of the previous k-tile are retired now.
                cute.nvgpu.warpgroup.wait_group(1)
                if k > 0:
                    ab_pipeline.consumer_release(releasing)
                    releasing.advance()
                reading.advance()
            cute.nvgpu.warpgroup.wait_group(0)
            ab_pipeline.consumer_release(releasing)
            mC[bidx * self.tile + tidx] = acc[0]
