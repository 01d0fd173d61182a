# cutespin-expect: kernel=ClusterRowSum.kernel verdict=verified
"""A 2-CTA cluster that shares one operand through a multicast TMA (``PipelineTmaAsync``).

Cluster shape (2, 1, 1): the two CTAs work on different rows of A (their own tiles) and the
same tile of B. Each stage, every CTA's producer warp loads its A tile into its own shared
memory; the CTA at m == 0 also loads the B tile once, multicast to both CTAs
(``mcast_mask`` = the CTAs with the same n). Each CTA's ``full[s]`` therefore completes with
its own A bytes plus the B bytes that CTA 0's copy delivers.

Because CTA 0 writes into CTA 1's B buffer, it may only refill a stage once both CTAs'
consumers are done with it: ``consumer_release`` signals every multicast partner (lane d of
each consumer warp arrives on CTA d's ``empty[s]``), and the consumer group is
``mcast_size * consumer warps`` arrivals, as in the Hopper GEMMs.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync


class ClusterRowSum:
    def __init__(self):
        self.tile = 64
        self.num_stages = 2
        self.tile_bytes = self.tile * self.tile * 2
        self.num_consumer_warps = 2
        self.threads = 32 * (1 + self.num_consumer_warps)
        self.cluster_shape_mnk = (2, 1, 1)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mOut: cute.Tensor):
        smem_layout = cute.make_layout((self.tile, self.tile), stride=(self.tile, 1))
        tma_a, tA = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, smem_layout, (self.tile, self.tile))
        tma_b, tB = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SMulticastOp(), mB, smem_layout, (self.tile, self.tile)
        )
        self.kernel(tma_a, tA, tma_b, tB, mOut).launch(
            grid=(2, 1, 1), block=(self.threads, 1, 1), cluster=self.cluster_shape_mnk
        )

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        cta_rank = cute.arch.block_idx_in_cluster()
        cta_layout_mnk = cute.make_layout(self.cluster_shape_mnk)
        cluster_coord = cta_layout_mnk.get_flat_coord(cta_rank)
        b_mcast_mask = cute.make_layout_image_mask(cta_layout_mnk, cluster_coord, mode=0)

        smem = cutlass.utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_stages)
        staged = cute.make_layout(
            (self.tile, self.tile, self.num_stages), stride=(self.tile, 1, self.tile * self.tile)
        )
        sA = smem.allocate_tensor(cutlass.Float16, staged, byte_alignment=128)
        sB = smem.allocate_tensor(cutlass.Float16, staged, byte_alignment=128)

        mcast_size = cute.size(cta_layout_mnk.shape[0]) + cute.size(cta_layout_mnk.shape[1]) - 1
        ab_pipeline = pipeline.PipelineTmaAsync.create(
            num_stages=self.num_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mcast_size * self.num_consumer_warps),
            tx_count=2 * self.tile_bytes,
            barrier_storage=barriers,
            cta_layout_vmnk=cute.make_layout((1, *cta_layout_mnk.shape)),
        )

        k_tile_cnt = cute.size(mA, mode=[1]) // self.tile
        if warp_idx == 0:
            producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_stages)
            for k in cutlass.range(k_tile_cnt):
                ab_pipeline.producer_acquire(producer_state)
                bar = ab_pipeline.producer_get_barrier(producer_state)
                cute.copy(tma_a, mA[(None, producer_state.count)], sA[(None, None, producer_state.index)], tma_bar_ptr=bar)
                if cluster_coord[0] == 0:
                    cute.copy(
                        tma_b, mB[(None, producer_state.count)], sB[(None, None, producer_state.index)],
                        tma_bar_ptr=bar, mcast_mask=b_mcast_mask,
                    )
                producer_state.advance()
            ab_pipeline.producer_tail(producer_state)
        else:
            row = tidx - 32
            acc = cutlass.Float32(0.0)
            consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages)
            for k in cutlass.range(k_tile_cnt):
                ab_pipeline.consumer_wait(consumer_state)
                a = sA[None, None, consumer_state.index][row, None].load()
                b = sB[None, None, consumer_state.index][row, None].load()
                acc = acc + (a * b).to(cutlass.Float32).reduce(cute.ReductionOp.ADD, 0.0, 0)
                ab_pipeline.consumer_release(consumer_state)
                consumer_state.advance()
            mOut[cta_rank * self.tile + row] = acc
