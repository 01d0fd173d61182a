# cutespin-expect: kernel=ScaleTmaStoreRing.kernel verdict=counterexample kinds=race lines=102
"""Epilogue through a two-buffer shared-memory ring written back by TMA stores.

One CTA of 128 threads per 64 x 192 fp16 tile, stored as three 64 x 64 subtiles. For each
subtile every thread scales its half row of A into buffer ``i % 2`` of ``sC`` (generic-proxy
stores), fences, and the CTA meets at a barrier; warp 0 then issues the TMA store of that buffer,
commits it and waits until at most one store is still reading shared memory.

Subtile 2 rewrites buffer 0, which the store of subtile 0 reads. Warp 0's wait after subtile 1
retires that store, but only for warp 0: there is no barrier after the wait (unlike
tma_store_ring_ok.py), so warps 1-3 are ordered only after warp 0's arrival at subtile 1's barrier,
which comes before that wait. They can write buffer 0 for subtile 2 while the TMA engine is still
reading it for subtile 0. The same order as the epilogue of the CUTLASS Sm120 dense GEMM example
(docs/corpus-findings.md, *cutlass examples (fifth session)*).

Expected: data race (write-after-read on sC[stage 0]).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class ScaleTmaStoreRing:
    def __init__(self):
        self.tile_m = 64
        self.tile_n = 64
        self.subtiles = 3
        self.epi_stages = 2
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
            cute.ceil_div(cute.size(mC, mode=[1]), self.tile_n * self.subtiles),
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
            cute.make_layout(
                (self.tile_m, self.tile_n, self.epi_stages),
                stride=(self.tile_n, 1, self.tile_m * self.tile_n),
            ),
            byte_alignment=128,
        )

        row = tidx // 2
        half = tidx % 2
        for i in cutlass.range_constexpr(self.subtiles):
            buf = i % self.epi_stages
            n_tile = bidy * self.subtiles + i
            gA = cute.local_tile(mA, (self.tile_m, self.tile_n), (bidx, n_tile))
            gC = cute.local_tile(mC_tma, (self.tile_m, self.tile_n), (bidx, n_tile))
            tCsC, tCgC = cpasync.tma_partition(
                tma_atom_c,
                0,
                cute.make_layout(1),
                cute.group_modes(sC, 0, 2),
                cute.group_modes(gC, 0, 2),
            )

            # Thread t owns row t // 2, columns 32 * (t % 2) .. 32 * (t % 2) + 31.
            thr_gA = cute.local_tile(gA, (1, 32), (row, half))
            thr_sC = cute.local_tile(sC[None, None, buf], (1, 32), (row, half))
            vals = thr_gA.load().to(cutlass.Float32) * alpha
            thr_sC.store(vals.to(cutlass.Float16))

            # Order our generic smem stores before the TMA's async-proxy read of the buffer.
            cute.arch.fence_view_async_shared()
            cute.arch.sync_threads()

            if warp_idx == 0:
                cute.copy(tma_atom_c, tCsC[(None, buf)], tCgC)
                cute.arch.cp_async_bulk_commit_group()
                # At most one store may still read the ring: the one just issued.
                cute.arch.cp_async_bulk_wait_group(self.epi_stages - 1, read=True)

        if warp_idx == 0:
            cute.arch.cp_async_bulk_wait_group(0, read=True)
