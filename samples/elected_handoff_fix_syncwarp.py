# cutespin-expect: kernel=ScaleHandoff.kernel verdict=verified
"""Warp-specialised handoff through shared memory: warp 0 stages a scaled row, warp 1 writes it out.

Each CTA handles one 32-element row. Warp 0 scales the row into shared memory (one element per
lane) and signals ``ready``; warp 1 waits on ``ready`` and writes the row out reversed, so every
consumer lane reads an element stored by a different producer lane.

Fix of elected_handoff_race.py that keeps the single elected arrive (count 1): a ``sync_warp()``
after the stores orders all 32 lanes' writes before the elected lane's release arrive.

Expected: correct.
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
            # Gather the whole warp's stores behind the elected lane before it releases them.
            cute.arch.sync_warp()
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(ready)
        else:
            # Consumer: write the row out reversed.
            cute.arch.mbarrier_wait(ready, 0)
            mY[bidx, lane] = sRow[self.row_len - 1 - lane]
