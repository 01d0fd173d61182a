# cutespin-expect: kernel=RowBlockNormalize.kernel verdict=counterexample kinds=deadlock lines=49,55
"""A CTA barrier inside a branch whose condition depends on the warp.

64 threads per CTA, one warp per block of 32 rows:
  * each warp whose first row is below ``num_rows`` (a kernel argument) writes its rows to shared
    memory and meets the other warp at a CTA barrier;
  * warp 0 then tells warp 1, through an mbarrier, that the shared block is ready, and warp 1
    waits for it.

BUG: ``warp_idx * 32 < num_rows`` differs between the warps when ``num_rows`` is 1..32: warp 0
enters the branch and waits at the CTA barrier for warp 1, while warp 1 skips it and waits on the
mbarrier that only warp 0 (stuck at the barrier) would arrive on. Both warps hang.

Expected: deadlock (CS101).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


class RowBlockNormalize:
    def __init__(self):
        self.threads = 64

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32, stream: cuda.CUstream):
        # mX, mY: (64,) fp32.
        self.kernel(mX, mY, num_rows).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        ready = smem.allocate_array(cutlass.Int64, num_elems=1)
        sRows = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64), byte_alignment=16)

        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(ready, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        row0 = warp_idx * 32
        if row0 < num_rows:
            sRows[row0 + lane] = mX[row0 + lane]
            cute.arch.sync_threads()

        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(ready)
        else:
            cute.arch.mbarrier_wait(ready, 0)
            mY[lane] = sRows[lane]
