# cutespin-expect: kernel=ScaleHandoff.kernel verdict=counterexample kinds=race lines=68,64,62
"""Warp-specialised handoff through shared memory: warp 0 stages a scaled row, warp 1 writes it out.

Each CTA handles one 32-element row. Warp 0 scales the row into shared memory (one element per
lane) and signals ``ready``; warp 1 waits on ``ready`` and writes the row out reversed, so every
consumer lane reads an element stored by a different producer lane.

BUG: ``ready`` is initialised with an arrival count of 1 and only the elected lane of warp 0
arrives. An mbarrier arrive releases the arriving thread's own prior writes only: the stores of
the other 31 producer lanes are not ordered before warp 1's reads: a lane-level release race
(on an H200 the output is usually right; racecheck cannot tell it from the fix, see groundtruth).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


class ScaleHandoff:
    def __init__(self):
        self.row_len = 32  # one element per producer lane
        self.threads = 64  # warp 0: producer, warp 1: consumer

    @cute.jit
    def __call__(
        self,
        mX: cute.Tensor,
        mY: cute.Tensor,
        scale: cutlass.Float32,
        stream: cuda.CUstream,
    ):
        # mX, mY: (rows, 32) fp32; one CTA per row.
        num_rows = cute.size(mX, mode=[0])
        self.kernel(mX, mY, scale).launch(
            grid=(num_rows, 1, 1),
            block=(self.threads, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, scale: cutlass.Float32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        ready = smem.allocate_array(cutlass.Int64, num_elems=1)
        sRow = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout(self.row_len), byte_alignment=16
        )

        if warp_idx == 0:
            with cute.arch.elect_one():
                # One arrival per producer warp.
                cute.arch.mbarrier_init(ready, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        if warp_idx == 0:
            # Producer: every lane scales one element into shared memory.
            sRow[lane] = mX[bidx, lane] * scale
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(ready)
        else:
            # Consumer: write the row out reversed.
            cute.arch.mbarrier_wait(ready, 0)
            mY[bidx, lane] = sRow[self.row_len - 1 - lane]
