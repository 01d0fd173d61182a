# cutespin-expect: kernel=WarpgroupRefill.kernel verdict=counterexample kinds=race lines=124
"""BUG: wgmma_warpgroup_refill_ok.py with warp 0 refilling the K slot before ``wait_group(1)``.

The K group was committed but nothing retired it: the tensor cores may still read the K tile
(of every warp of the warpgroup, warp 0's own share included) when the next TMA load overwrites it
(write-after-read). The fix: refill after ``wait_group(1)``, which retires the K group for the
whole warpgroup, as in wgmma_warpgroup_refill_ok.py.

The original description of the correct kernel follows.

One warpgroup that loads its own operands: warp 0 refills a single K slot right after its own
``wait_group``.

The block is one warpgroup (warps 0-3). Every warp waits for the K tile, issues the warpgroup MMA
(wgmma) that reads it together with Q, and commits the group; then a second group multiplies the
scores with the V tile of the step. ``wait_group(1)`` retires the first group (the one that read
K) and leaves the V group in flight; warp 0 then issues the TMA load of the next K tile into the
same slot, without any barrier with warps 1-3.

That is safe because a wgmma is one operation of the whole warpgroup: it starts once all four
warps have issued it, and warp 0's ``wait_group`` returns only when the group is done, which
includes the other warps' share of the operand reads. (The block-sparse attention forward of
cudnn-frontend's SM90 path refills K this way.)

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class WarpgroupRefill:
    def __init__(self):
        self.tile = 64
        self.tile_bytes = self.tile * self.tile * 2
        self.threads = 128  # one warpgroup

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor):
        tile_layout = cute.make_layout((self.tile, self.tile), stride=(self.tile, 1))
        tma_q, gQ_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mQ, tile_layout,
                                                    (self.tile, self.tile))
        tma_k, gK_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mK, tile_layout,
                                                    (self.tile, self.tile))
        tma_v, gV_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mV, tile_layout,
                                                    (self.tile, self.tile))
        grid = (cute.ceil_div(cute.size(mQ, mode=[0]), self.tile), 1, 1)
        self.kernel(tma_q, gQ_tma, tma_k, gK_tma, tma_v, gV_tma, mO).launch(
            grid=grid, block=(self.threads, 1, 1), cluster=(1, 1, 1))

    @cute.kernel
    def kernel(self, tma_q: cute.CopyAtom, mQ: cute.Tensor, tma_k: cute.CopyAtom, mK: cute.Tensor,
               tma_v: cute.CopyAtom, mV: cute.Tensor, mO: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        q_bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        k_bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        v_bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        tile = cute.make_layout((self.tile, self.tile), stride=(self.tile, 1))
        sQ = smem.allocate_tensor(cutlass.Float16, tile, byte_alignment=128)
        sK = smem.allocate_tensor(cutlass.Float16, tile, byte_alignment=128)
        sV = smem.allocate_tensor(cutlass.Float16, tile, byte_alignment=128)

        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(q_bar, 1)
                cute.arch.mbarrier_init(k_bar, 1)
                cute.arch.mbarrier_init(v_bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        gQ = cute.local_tile(mQ, (self.tile, self.tile), (bidx, 0))
        gK = cute.local_tile(mK, (self.tile, self.tile), (0, None))
        gV = cute.local_tile(mV, (self.tile, self.tile), (0, None))
        n_tiles = cute.size(gK, mode=[2])
        tQsQ, tQgQ = cpasync.tma_partition(tma_q, 0, cute.make_layout(1), cute.group_modes(sQ, 0, 2),
                                           cute.group_modes(gQ, 0, 2))
        tKsK, tKgK = cpasync.tma_partition(tma_k, 0, cute.make_layout(1), cute.group_modes(sK, 0, 2),
                                           cute.group_modes(gK, 0, 2))
        tVsV, tVgV = cpasync.tma_partition(tma_v, 0, cute.make_layout(1), cute.group_modes(sV, 0, 2),
                                           cute.group_modes(gV, 0, 2))

        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(q_bar, self.tile_bytes)
                cute.arch.mbarrier_arrive_and_expect_tx(k_bar, self.tile_bytes)
            cute.copy(tma_q, tQgQ, tQsQ, tma_bar_ptr=q_bar)
            cute.copy(tma_k, tKgK[None, 0], tKsK, tma_bar_ptr=k_bar)

        tiled_mma = cute.make_tiled_mma(cute.nvgpu.warpgroup.MmaF16BF16Op(
            cutlass.Float16, cutlass.Float32, (self.tile, self.tile, 16),
            cute.nvgpu.warpgroup.OperandSource.SMEM,
            cute.nvgpu.warpgroup.OperandMajorMode.K, cute.nvgpu.warpgroup.OperandMajorMode.K))
        thr_mma = tiled_mma.get_slice(tidx)
        tSrQ = tiled_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = tiled_mma.make_fragment_B(thr_mma.partition_B(sK))
        tOrV = tiled_mma.make_fragment_B(thr_mma.partition_B(sV))
        acc_s = cute.make_fragment(thr_mma.partition_shape_C((self.tile, self.tile)), cutlass.Float32)
        acc_o = cute.make_fragment(thr_mma.partition_shape_C((self.tile, self.tile)), cutlass.Float32)

        cute.arch.mbarrier_wait(q_bar, 0)
        for n in cutlass.range(n_tiles):
            # V for this step; the previous step's V group was retired by its wait_group(0).
            if warp_idx == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(v_bar, self.tile_bytes)
                cute.copy(tma_v, tVgV[None, n], tVsV, tma_bar_ptr=v_bar)
            cute.arch.mbarrier_wait(k_bar, n % 2)
            cute.nvgpu.warpgroup.fence()
            cute.gemm(tiled_mma, acc_s, tSrQ[(None, None, 0)], tSrK[(None, None, 0)], acc_s)
            cute.nvgpu.warpgroup.commit_group()
            cute.arch.mbarrier_wait(v_bar, n % 2)
            cute.gemm(tiled_mma, acc_o, tSrQ[(None, None, 0)], tOrV[(None, None, 0)], acc_o)
            cute.nvgpu.warpgroup.commit_group()
            # BUG: nothing has retired the K group yet.
            if warp_idx == 0:
                if n + 1 < n_tiles:
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive_and_expect_tx(k_bar, self.tile_bytes)
                    cute.copy(tma_k, tKgK[None, n + 1], tKsK, tma_bar_ptr=k_bar)
            cute.nvgpu.warpgroup.wait_group(0)
        mO[bidx * self.tile + tidx] = acc_o[0]
