# cutespin-expect: kernel=ScaleTmaStore.kernel verdict=counterexample kinds=fence lines=97,94,91
"""Epilogue staged through shared memory and stored with a TMA store -- missing proxy fence.

One CTA of 128 threads per 64 x 64 fp16 tile: each thread loads half a row of A, scales it by
alpha and stores it into the smem tile ``sC`` (generic-proxy stores). After a CTA barrier, warp 0
writes the whole tile to C with one TMA store and waits until the TMA has read shared memory.

BUG: there is no ``fence_view_async_shared()`` between the threads' generic stores to ``sC`` and
the TMA store. The CTA barrier orders the threads with each other, but the TMA reads ``sC``
through the async proxy, which is not ordered with generic-proxy writes without a
``fence.proxy.async.shared::cta``: the TMA may write stale tile contents to C.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class ScaleTmaStore:
    def __init__(self):
        self.tile_m = 64
        self.tile_n = 64
        self.threads = 128  # two threads per row, 32 contiguous elements each

    @cute.jit
    def __call__(
        self,
        mA: cute.Tensor,
        mC: cute.Tensor,
        alpha: cutlass.Float32,
        stream: cuda.CUstream,
    ):
        # mA, mC: (M, N) fp16, N-major.
        c_smem_layout = cute.make_layout((self.tile_m, self.tile_n), stride=(self.tile_n, 1))
        tma_atom_c, tma_tensor_c = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(),
            mC,
            c_smem_layout,
            (self.tile_m, self.tile_n),
        )
        grid = (
            cute.ceil_div(cute.size(mC, mode=[0]), self.tile_m),
            cute.ceil_div(cute.size(mC, mode=[1]), self.tile_n),
            1,
        )
        self.kernel(mA, tma_atom_c, tma_tensor_c, alpha).launch(
            grid=grid,
            block=(self.threads, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(
        self,
        mA: cute.Tensor,
        tma_atom_c: cute.CopyAtom,
        mC_tma: cute.Tensor,
        alpha: cutlass.Float32,
    ):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        sC = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((self.tile_m, self.tile_n), stride=(self.tile_n, 1)),
            byte_alignment=128,
        )

        gA = cute.local_tile(mA, (self.tile_m, self.tile_n), (bidx, bidy))
        gC = cute.local_tile(mC_tma, (self.tile_m, self.tile_n), (bidx, bidy))

        # TMA views of the tile: one whole 64 x 64 box.
        tCsC, tCgC = cpasync.tma_partition(
            tma_atom_c,
            0,
            cute.make_layout(1),
            cute.group_modes(sC, 0, 2),
            cute.group_modes(gC, 0, 2),
        )

        # Thread t owns row t // 2, columns 32 * (t % 2) .. 32 * (t % 2) + 31.
        row = tidx // 2
        half = tidx % 2
        thr_gA = cute.local_tile(gA, (1, 32), (row, half))
        thr_sC = cute.local_tile(sC, (1, 32), (row, half))
        vals = thr_gA.load().to(cutlass.Float32) * alpha
        thr_sC.store(vals.to(cutlass.Float16))

        # The whole tile must be in smem before warp 0 hands it to the TMA.
        cute.arch.sync_threads()

        if warp_idx == 0:
            cute.copy(tma_atom_c, tCsC, tCgC)
            cute.arch.cp_async_bulk_commit_group()
            # sC must stay valid until the TMA engine has read it.
            cute.arch.cp_async_bulk_wait_group(0, read=True)
