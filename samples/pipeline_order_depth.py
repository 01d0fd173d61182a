# cutespin-expect: kernel=PingPongEpilogue.kernel verdict=counterexample kinds=race lines=42
"""The ping-pong epilogue of ``pipeline_order_ok.py`` with a ring of depth 2 over one buffer.

BUG: with ``depth=2`` group 0's ring state starts on phase 1 at both stages, so its first two
``wait()``s pass on fresh barriers: warp 0 takes two turns before warp 1 has taken one, and its
second write of ``sEpi`` overlaps warp 1's turn. ``depth`` counts the turns a group may run
ahead; it must match the number of buffers the groups rotate through (here 1).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


class PingPongEpilogue:
    def __init__(self):
        self.depth = 2  # BUG: one buffer
        self.num_groups = 2
        self.threads = 32 * self.num_groups

    @cute.jit
    def __call__(self, mOut: cute.Tensor, n_tiles: cutlass.Int32):
        self.kernel(mOut, n_tiles).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mOut: cute.Tensor, n_tiles: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        order_bars = smem.allocate_array(cutlass.Int64, num_elems=self.depth * self.num_groups)
        sEpi = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)

        order = pipeline.PipelineOrder.create(
            barrier_storage=order_bars,
            depth=self.depth,
            length=self.num_groups,
            group_id=warp_idx,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        )
        for t in cutlass.range(n_tiles):
            order.wait()
            sEpi[lane] = cutlass.Float32(t * 2 + warp_idx)
            mOut[t * 64 + warp_idx * 32 + lane] = sEpi[lane]
            order.arrive()
