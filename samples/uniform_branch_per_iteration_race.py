# cutespin-expect: kernel=AlternatingPasses.kernel verdict=counterexample kinds=race lines=49,53
"""A uniform condition inside a loop takes different values in different iterations.

64 threads per CTA. Iterations alternate between two passes, chosen by the parity of
``step + phase`` (``phase`` is a kernel argument, so every thread takes the same pass in a given
iteration):
  * a *read* pass: warp 1 copies the shared tile out;
  * a *write* pass: warp 0 refreshes the shared tile and both warps meet at a CTA barrier.

BUG: after a read pass, the next iteration's write pass lets warp 0 overwrite the tile with no
barrier since warp 1's reads: nothing orders the two, so warp 1 may read the refreshed values
or a mix (a race on ``sTile``). The condition is
uniform within an iteration but not across iterations, so the race needs one iteration of each.

Expected: race (CS201).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


class AlternatingPasses:
    def __init__(self):
        self.threads = 64

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, steps: cutlass.Int32, phase: cutlass.Int32,
                 stream: cuda.CUstream):
        # mX, mY: (32,) fp32.
        self.kernel(mX, mY, steps, phase).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, steps: cutlass.Int32, phase: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sTile = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)

        if warp_idx == 0:
            sTile[lane] = mX[lane]
        cute.arch.sync_threads()

        for step in cutlass.range(steps):
            if (step + phase) % 2 == 0:
                # Read pass.
                if warp_idx == 1:
                    mY[lane] = sTile[lane]
            else:
                # Write pass.
                if warp_idx == 0:
                    sTile[lane] = sTile[lane] + 1.0
                cute.arch.sync_threads()
