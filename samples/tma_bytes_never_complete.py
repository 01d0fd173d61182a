# cutespin-expect: kernel=WeightedRowSumTma.kernel verdict=counterexample kinds=deadlock lines=143,128,126
"""Weighted row sums: A streamed through a 2-stage TMA ring, one weight tile W loaded once.

out[m] = sum_k A[m, k] * W[m % 64, k % 64]. 96 threads per CTA, one CTA per 64-row block:
  * warp 0 (producer) first loads the 64 x 64 fp16 weight tile into ``sW`` (its own barrier
    ``w_bar``), then streams the 64 x 64 fp16 K tiles of A through ``sA`` with ``full[s]`` /
    ``empty[s]``;
  * warps 1-2 (consumers, one row per thread) wait for W once, then wait on ``full[s]``, multiply
    their row of the A tile with their row of W, and release the slot (one arrive per thread).

BUG: W used to be streamed next to A, and the ring still arms ``full[s]`` with
``self.stage_bytes = a_bytes + w_bytes``. Only the A tile (8 KiB) is copied per stage, so each
``full[s]`` phase waits for 8 KiB of transactions that never arrive: the consumers hang on their
first ``full`` wait, and (once K has more tiles than stages) the producer on its first refill.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class WeightedRowSumTma:
    def __init__(self):
        self.tile_m = 64
        self.tile_k = 64
        self.stages = 2
        self.a_bytes = 64 * 64 * 2  # fp16 A tile
        self.w_bytes = 64 * 64 * 2  # fp16 W tile
        self.stage_bytes = self.a_bytes + self.w_bytes
        self.num_consumer_threads = 64  # warps 1-2, one row each
        self.threads = 32 + self.num_consumer_threads

    @cute.jit
    def __call__(
        self,
        mA: cute.Tensor,
        mW: cute.Tensor,
        mOut: cute.Tensor,
        stream: cuda.CUstream,
    ):
        # mA: (M, K) fp16, K-major; mW: (64, 64) fp16; mOut: (M,) fp32.
        tile_layout = cute.make_layout((self.tile_m, self.tile_k), stride=(self.tile_k, 1))
        tma_atom_a, tma_tensor_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, tile_layout, (self.tile_m, self.tile_k)
        )
        tma_atom_w, tma_tensor_w = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mW, tile_layout, (self.tile_m, self.tile_k)
        )
        grid = (cute.ceil_div(cute.size(mA, mode=[0]), self.tile_m), 1, 1)
        self.kernel(tma_atom_a, tma_tensor_a, tma_atom_w, tma_tensor_w, mOut).launch(
            grid=grid,
            block=(self.threads, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(
        self,
        tma_atom_a: cute.CopyAtom,
        mA_tma: cute.Tensor,
        tma_atom_w: cute.CopyAtom,
        mW_tma: cute.Tensor,
        mOut: cute.Tensor,
    ):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        full_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        empty_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        w_bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        sA = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout(
                (self.tile_m, self.tile_k, self.stages),
                stride=(self.tile_k, 1, self.tile_m * self.tile_k),
            ),
            byte_alignment=128,
        )
        sW = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((self.tile_m, self.tile_k), stride=(self.tile_k, 1)),
            byte_alignment=128,
        )

        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(w_bar, 1)
                for s in cutlass.range_constexpr(self.stages):
                    cute.arch.mbarrier_init(full_bar + s, 1)
                    cute.arch.mbarrier_init(empty_bar + s, self.num_consumer_threads)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        gA = cute.local_tile(mA_tma, (self.tile_m, self.tile_k), (bidx, None))
        gW = cute.local_tile(mW_tma, (self.tile_m, self.tile_k), (0, 0))
        k_tile_cnt = cute.size(gA, mode=[2])
        # TMA views: mode 0 is one whole 64 x 64 box, then k tiles (gmem) or stages (smem).
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a,
            0,
            cute.make_layout(1),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )
        tWsW, tWgW = cpasync.tma_partition(
            tma_atom_w,
            0,
            cute.make_layout(1),
            cute.group_modes(sW, 0, 2),
            cute.group_modes(gW, 0, 2),
        )

        if warp_idx == 0:
            # W is the same for every K tile: load it once.
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(w_bar, self.w_bytes)
            cute.copy(tma_atom_w, tWgW, tWsW, tma_bar_ptr=w_bar)

            stage = 0
            phase = 1
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(empty_bar + stage, phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full_bar + stage, self.stage_bytes)
                cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, stage], tma_bar_ptr=full_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
        else:
            row = tidx - 32
            cute.arch.mbarrier_wait(w_bar, 0)
            w_row = sW[row, None].load().to(cutlass.Float32)

            acc = cutlass.Float32(0.0)
            stage = 0
            phase = 0
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(full_bar + stage, phase)
                sA_stage = sA[None, None, stage]
                a_row = sA_stage[row, None].load().to(cutlass.Float32)
                acc = acc + (a_row * w_row).reduce(cute.ReductionOp.ADD, 0.0, 0)
                cute.arch.mbarrier_arrive(empty_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
            mOut[bidx * self.tile_m + row] = acc
