# cutespin-expect: kernel=RowScale.kernel verdict=counterexample kinds=race lines=44,47
"""BUG: cp_async_own_partition_ok.py reading another thread's slice without a barrier after the wait.

Each thread copies its 16-byte slice of a 4 x 128 fp32 tile into ``sX`` with cp.async, waits
for its own group with ``cp_async_wait_group(0)`` and reads the *same* slice back through the
same partition ``tXsX``: a thread reads only what it copied itself, so no barrier is needed
between the wait and the read (the pattern of quack's row kernels). The CTA barrier before the
second tile orders every thread's reads before the refill.

Expected: CS201: the read goes through a different partition (elements other warps copied).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class RowScale:
    def __init__(self):
        self.threads = 128

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
        # mX, mY: (M, 128) fp32; one CTA per 4 rows, two passes of 2 rows.
        grid = (cute.ceil_div(cute.size(mX, mode=[0]), 4), 1, 1)
        self.kernel(mX, mY).launch(grid=grid, block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout((2, 128), stride=(256, 1)), 16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 1)))
        thr = tiled.get_slice(tidx)
        tXsX = thr.partition_D(sX)
        for half in range(2):
            gX = cute.local_tile(mX, (2, 128), (bidx * 2 + half, 0))
            tXgX = thr.partition_S(gX)
            tXrX = cute.make_rmem_tensor_like(tXgX)
            cute.copy(tiled, tXgX, tXsX)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.autovec_copy(cute.local_partition(sX, cute.make_layout(128), tidx), tXrX)
            y = tXrX.load() * 2.0
            gY = cute.local_tile(mY, (2, 128), (bidx * 2 + half, 0))
            tXgY = thr.partition_D(gY)
            tXgY.store(y)
            cute.arch.sync_threads()
