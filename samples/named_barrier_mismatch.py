# cutespin-expect: kernel=WeightedLaneSums.kernel verdict=counterexample kinds=deadlock lines=70
"""Weighted partial sums with a loader warp and three epilogue warps on a named barrier.

128 threads per CTA, one CTA per row of X:
  * warp 0 (loader) stages the 96-element weight vector in shared memory, then is done;
  * warps 1-3 (epilogue) each multiply 32 weights by the row of X into ``sPart``, meet on a named
    barrier, and warp 1 folds the 96 products into 32 lane sums.

BUG: the epilogue barrier is sized with the CTA's thread count (128) instead of the 96 threads of
the three epilogue warps that use it. The loader warp never reaches it, so ``bar.sync 1, 128``
waits for a fourth warp that never comes and the epilogue warps hang.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


class WeightedLaneSums:
    def __init__(self):
        self.loader_warp = 0
        self.epilogue_warps = (1, 2, 3)
        self.threads = 32 * (1 + len(self.epilogue_warps))
        self.vec_len = 32 * len(self.epilogue_warps)  # one product per epilogue thread
        self.epi_barrier_id = 1  # 0 is sync_threads

    @cute.jit
    def __call__(
        self,
        mW: cute.Tensor,
        mX: cute.Tensor,
        mY: cute.Tensor,
        stream: cuda.CUstream,
    ):
        # mW: (96,) fp32; mX: (rows, 96) fp32; mY: (rows, 32) fp32.
        num_rows = cute.size(mX, mode=[0])
        self.kernel(mW, mX, mY).launch(
            grid=(num_rows, 1, 1),
            block=(self.threads, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(self, mW: cute.Tensor, mX: cute.Tensor, mY: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        lane = cute.arch.lane_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        sW = smem.allocate_tensor(cutlass.Float32, cute.make_layout(self.vec_len), byte_alignment=16)
        sPart = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout(self.vec_len), byte_alignment=16
        )

        epi_sync = pipeline.NamedBarrier(barrier_id=self.epi_barrier_id, num_threads=self.threads)

        if warp_idx == self.loader_warp:
            for i in cutlass.range_constexpr(len(self.epilogue_warps)):
                sW[32 * i + lane] = mW[32 * i + lane]
        # Weights visible to every warp.
        cute.arch.sync_threads()

        if warp_idx != self.loader_warp:
            t = tidx - 32
            sPart[t] = sW[t] * mX[bidx, t]
            # All 96 products in smem before warp 1 folds them.
            epi_sync.arrive_and_wait()
            if warp_idx == 1:
                mY[bidx, lane] = sPart[lane] + sPart[lane + 32] + sPart[lane + 64]
