# cutespin-expect: kernel=OptionalRescale.kernel verdict=verified
"""A CTA barrier inside a branch on a kernel argument (a uniform condition).

64 threads per CTA:
  * warp 0 stages 32 inputs in shared memory, then both warps meet at a CTA barrier;
  * warp 1 copies the staged values out; both warps meet again;
  * when ``scale`` is non-zero (a kernel argument: the same for every thread), warp 0 rescales
    the staged values in place and both warps meet at a third barrier inside the branch;
  * warp 1 writes the final values out.

The barrier inside the branch is reached by both warps or by neither, because the condition does
not depend on the thread. A model that let warp 0 take the branch while warp 1 skipped it would
pair warp 0's third barrier with warp 1's exit and report warp 1's last read as racing with warp
0's rescale, which no launch can do.

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


class OptionalRescale:
    def __init__(self):
        self.threads = 64

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, mZ: cute.Tensor, scale: cutlass.Float32,
                 stream: cuda.CUstream):
        # mX, mY, mZ: (32,) fp32.
        self.kernel(mX, mY, mZ, scale).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, mZ: cute.Tensor, scale: cutlass.Float32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)

        if warp_idx == 0:
            sBuf[lane] = mX[lane]
        cute.arch.sync_threads()
        if warp_idx == 1:
            mY[lane] = sBuf[lane]
        cute.arch.sync_threads()

        if scale != cutlass.Float32(0.0):
            if warp_idx == 0:
                sBuf[lane] = sBuf[lane] * scale
            # Every warp reaches this barrier: the condition is the same for the whole CTA.
            cute.arch.sync_threads()

        if warp_idx == 1:
            mZ[lane] = sBuf[lane]
