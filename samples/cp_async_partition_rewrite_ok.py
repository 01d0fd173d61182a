# cutespin-expect: kernel=SplitScale.kernel verdict=verified
"""Predicated cp.async into one partition, then read-rescale-write-back through another partition.

Each thread copies its element of a 128-entry fp32 vector into ``sL`` through the copy partition
``tLsL`` when its index is in bounds (``tidx < n_valid``), and fills the element with -inf
otherwise (a plain store through the same partition). After ``cp_async_wait_group(0)`` and
``sync_threads()`` every thread loads its element through a *second* per-thread partition
``tRsL``, rescales it and stores it back through that partition; a second barrier orders the
write-back before the final read through the copy partition. No two threads touch the same
element between barriers (the shape of flash-attn's split-combine LSE step).

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class SplitScale:
    def __init__(self):
        self.threads = 128

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, n_valid: cutlass.Int32, stream: cuda.CUstream):
        self.kernel(mX, mY, n_valid).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, n_valid: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sL = smem.allocate_tensor(cutlass.Float32, cute.make_layout((4, 32), stride=(32, 1)), 16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 1)))
        thr = tiled.get_slice(tidx)
        tLsL = thr.partition_D(sL)
        tLgX = thr.partition_S(mX)
        if tidx < n_valid:
            cute.copy(tiled, tLgX, tLsL)
        else:
            tLsL.fill(-cutlass.Float32.inf)
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        tRsL = cute.local_partition(sL, cute.make_layout((32, 4), stride=(4, 1)), tidx)
        tRrL = cute.make_rmem_tensor_like(tRsL)
        cute.autovec_copy(tRsL, tRrL)
        tRrL.store(tRrL.load() * 0.5)
        cute.autovec_copy(tRrL, tRsL)
        cute.arch.sync_threads()
        tLrL = cute.make_rmem_tensor_like(tLsL)
        cute.autovec_copy(tLsL, tLrL)
        tLgY = thr.partition_D(mY)
        tLgY.store(tLrL.load())
