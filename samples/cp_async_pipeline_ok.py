# cutespin-expect: kernel=TileColumnSum.kernel verdict=verified
"""A multistage Ampere-style cp.async pipeline: column sums of a row of 32 x 32 fp32 tiles.

Each of the 128 threads copies its slice of the next tile from global memory into one stage of
the shared ring ``sA`` with ``cp.async`` (CopyG2SOp), one commit group per tile. Before a tile
is read, ``cp_async_wait_group(stages - 2)`` retires that tile's group for the issuing thread
and ``sync_threads()`` makes every thread's copies visible to the others: the threads then read
the tile through a *different* partition (a column per thread), so they read elements other
threads copied. The same barrier also orders the reads of the stage refilled next (read one
iteration earlier) before the copy that overwrites it.

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class TileColumnSum:
    def __init__(self):
        self.tile = 32
        self.stages = 3
        self.threads = 128

    @cute.jit
    def __call__(self, mA: cute.Tensor, mOut: cute.Tensor, stream: cuda.CUstream):
        # mA: (M, K) fp32, K-major; one CTA per 32-row band; mOut: (M // 32, 32) column sums.
        grid = (cute.ceil_div(cute.size(mA, mode=[0]), self.tile), 1, 1)
        self.kernel(mA, mOut).launch(grid=grid, block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mOut: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((32, 32, 3), stride=(32, 1, 1024)), 16
        )

        # Loads: 4 consecutive floats (16 bytes) per cp.async, 8 threads per row.
        g2s_atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        g2s = cute.make_tiled_copy_tv(
            g2s_atom, cute.make_layout((16, 8), stride=(8, 1)), cute.make_layout((1, 4))
        )
        thr_g2s = g2s.get_slice(tidx)
        gA = cute.local_tile(mA, (self.tile, self.tile), (bidx, None))  # (32, 32, k_tiles)
        tAgA = thr_g2s.partition_S(gA)
        tAsA = thr_g2s.partition_D(sA)

        # Reads: thread t sums a quarter of column t % 32.
        s2r = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32),
            cute.make_layout((8, 32), stride=(1, 8)),
            cute.make_layout((4, 1)),
        )
        tRsA = s2r.get_slice(tidx).partition_S(sA)
        tRrA = cute.make_rmem_tensor_like(tRsA[None, None, None, 0])

        k_tiles = cute.size(gA, mode=[2])
        for s in range(self.stages - 1):
            cute.copy(g2s, tAgA[None, None, None, s], tAsA[None, None, None, s])
            cute.arch.cp_async_commit_group()

        acc = cute.zeros_like(tRrA, cutlass.Float32)
        for k in range(k_tiles):
            cute.arch.cp_async_wait_group(self.stages - 2)
            cute.arch.sync_threads()
            cute.autovec_copy(tRsA[None, None, None, k % self.stages], tRrA)
            acc.store(acc.load() + tRrA.load())
            nxt = k + self.stages - 1
            if nxt < k_tiles:
                cute.copy(g2s, tAgA[None, None, None, nxt], tAsA[None, None, None, nxt % self.stages])
            cute.arch.cp_async_commit_group()

        cute.arch.cp_async_wait_group(0)
        total = acc.load().reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0)
        mOut[bidx, tidx % 32] = total
