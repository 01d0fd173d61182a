# cutespin-expect: kernel=OptionalBias.kernel verdict=verified
"""An optional extra stage, produced and consumed under the same kernel-argument condition.

64 threads per CTA, a 2-stage ``PipelineAsync``. Warp 0 produces: when ``has_bias`` is set it
first sends a bias row through the ring, then one row per iteration. Warp 1 consumes the same
sequence: the bias row only when ``has_bias`` is set. The condition is a kernel argument, the
same for every thread of the CTA, so both warps advance their pipeline states the same number
of times (policy P14): after the branch the state is checked for each value of the condition.

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


class OptionalBias:
    def __init__(self):
        self.num_stages = 2

    @cute.jit
    def __call__(self, mX: cute.Tensor, mB: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32,
                 has_bias: cutlass.Int32):
        self.kernel(mX, mB, mY, num_rows, has_bias).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mB: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32,
               has_bias: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()

        smem = cutlass.utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_stages)
        sRow = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((32, self.num_stages)), byte_alignment=16
        )
        pipe = pipeline.PipelineAsync.create(
            num_stages=self.num_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            barrier_storage=barriers,
        )
        prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_stages)
        cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages)

        if warp_idx == 0:
            if has_bias != 0:
                pipe.producer_acquire(prod)
                slot = sRow[None, prod.index]
                slot[lane] = mB[lane]
                pipe.producer_commit(prod)
                prod.advance()
            for r in cutlass.range(num_rows):
                pipe.producer_acquire(prod)
                slot = sRow[None, prod.index]
                slot[lane] = mX[r, lane]
                pipe.producer_commit(prod)
                prod.advance()
            pipe.producer_tail(prod)
        else:
            bias = cutlass.Float32(0.0)
            if has_bias != 0:
                pipe.consumer_wait(cons)
                slot = sRow[None, cons.index]
                bias = slot[lane]
                pipe.consumer_release(cons)
                cons.advance()
            for r in cutlass.range(num_rows):
                pipe.consumer_wait(cons)
                slot = sRow[None, cons.index]
                mY[r, lane] = slot[lane] + bias
                pipe.consumer_release(cons)
                cons.advance()
