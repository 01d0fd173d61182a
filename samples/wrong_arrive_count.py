# cutespin-expect: kernel=RowSumTmaRing3.kernel verdict=counterexample kinds=deadlock|overrun|race lines=75,94,96,108,110,97,112
"""Row sums of a (M, K) fp16 matrix through a 2-stage TMA ring, three consumer warps.

Warp-specialised, 128 threads per CTA, one CTA per 96-row block:
  * warp 0 (producer) waits for a free slot on ``empty[s]``, arms ``full[s]`` with the tile bytes
    from its elected lane and issues the TMA load of the next 96 x 64 K tile;
  * warps 1-3 (consumers, one row per thread) wait on ``full[s]``, sum their row of the slot and
    release it with one arrive per thread on ``empty[s]``.

BUG: the kernel used to have two consumer warps; the third one was added (and the tile grown to 96
rows) but ``empty[s]`` is still initialised for 64 arrivals while 96 threads arrive. The phase
completes as soon as any two consumer warps have released the slot, so the producer refills it
while the third warp may still be reading it, and the surplus 32 arrivals then count towards the
slot's next phase, which completes early again or mismatches phases. On an H200 the producer's
over-arrival on ``full[s]`` (line 96) traps: ``unspecified launch failure`` (see groundtruth).
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class RowSumTmaRing3:
    def __init__(self):
        self.num_consumer_warps = 3
        self.num_consumer_threads = 32 * self.num_consumer_warps
        self.tile_m = self.num_consumer_threads  # one row per consumer thread
        self.tile_k = 64
        self.stages = 2
        self.tile_bytes = 96 * 64 * 2  # one fp16 A tile per stage
        self.threads = 32 + self.num_consumer_threads

    @cute.jit
    def __call__(self, mA: cute.Tensor, mOut: cute.Tensor, stream: cuda.CUstream):
        # mA: (M, K) fp16, K-major; mOut: (M,) fp32.
        a_smem_layout = cute.make_layout((self.tile_m, self.tile_k), stride=(self.tile_k, 1))
        tma_atom_a, tma_tensor_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(),
            mA,
            a_smem_layout,
            (self.tile_m, self.tile_k),
        )
        grid = (cute.ceil_div(cute.size(mA, mode=[0]), self.tile_m), 1, 1)
        self.kernel(tma_atom_a, tma_tensor_a, mOut).launch(
            grid=grid,
            block=(self.threads, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(self, tma_atom_a: cute.CopyAtom, mA_tma: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = cutlass.utils.SmemAllocator()
        full_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        empty_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        sA = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout(
                (self.tile_m, self.tile_k, self.stages),
                stride=(self.tile_k, 1, self.tile_m * self.tile_k),
            ),
            byte_alignment=128,
        )

        if warp_idx == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(self.stages):
                    cute.arch.mbarrier_init(full_bar + s, 1)
                    # One arrival per consumer thread (2 warps x 32).
                    cute.arch.mbarrier_init(empty_bar + s, 64)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        gA = cute.local_tile(mA_tma, (self.tile_m, self.tile_k), (bidx, None))
        k_tile_cnt = cute.size(gA, mode=[2])
        # TMA views: mode 0 is one whole 96 x 64 box, then k tiles (gmem) or stages (smem).
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a,
            0,
            cute.make_layout(1),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )

        if warp_idx == 0:
            stage = 0
            phase = 1
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(empty_bar + stage, phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full_bar + stage, self.tile_bytes)
                cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, stage], tma_bar_ptr=full_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
        else:
            row = tidx - 32
            acc = cutlass.Float32(0.0)
            stage = 0
            phase = 0
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(full_bar + stage, phase)
                sA_stage = sA[None, None, stage]
                vals = sA_stage[row, None].load()
                acc = acc + vals.to(cutlass.Float32).reduce(cute.ReductionOp.ADD, 0.0, 0)
                cute.arch.mbarrier_arrive(empty_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
            mOut[bidx * self.tile_m + row] = acc
