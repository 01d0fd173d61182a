# cutespin-expect: kernel=PingPongEpilogue.kernel verdict=verified
"""Two math warps take turns on one shared epilogue buffer through ``cutlass.pipeline.PipelineOrder``.

The ping-pong idiom of the Hopper FMHA and the sm120 ping-pong GEMM, with one warp per group:
``PipelineOrder.create(depth=1, length=2, group_id=warp_idx)`` gives each group a token ring.
Group 0 passes its first ``wait()`` at once; group g waits until group g-1 has called
``arrive()`` (which also advances the group's own ring state). Between the two calls a group owns
the buffer ``sEpi``, so the two warps never write it at the same time. (``depth`` is how many
turns a group may take ahead of the next one: a single shared buffer needs depth 1.)
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


class PingPongEpilogue:
    def __init__(self):
        self.depth = 1
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
