# cutespin-expect: kernel=RowSumTmaRing.kernel verdict=verified
"""Row sums of a (M, K) fp16 matrix, K streamed through a 4-stage TMA ring.

Warp-specialised, 96 threads per CTA, one CTA per 64-row block:
  * warp 0 (producer) waits for a free slot on ``empty[s]``, arms ``full[s]`` with the tile's byte
    count from its elected lane, and issues the TMA load of the next 64 x 64 K tile into slot s;
  * warps 1-2 (consumers, one row per thread) wait on ``full[s]``, sum their row of the slot and
    release it: every consumer thread arrives on ``empty[s]`` after its own reads, so ``empty``
    expects 64 arrivals.
Phases follow the CUTLASS convention: the producer starts at phase 1 (fresh slots are free), the
consumers at phase 0, and both flip their phase whenever the stage index wraps.

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class RowSumTmaRing:
    def __init__(self):
        self.tile_m = 64
        self.tile_k = 64
        self.stages = 4
        self.tile_bytes = 64 * 64 * 2  # one fp16 A tile per stage
        self.producer_warp = 0
        self.num_consumer_threads = 64  # warps 1-2, one row each
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
            cluster=(1, 1, 1),
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
        # (row, k, stage), K-major like the TMA box.
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
                    # full: the producer's single arrive_and_expect_tx, plus the TMA bytes.
                    cute.arch.mbarrier_init(full_bar + s, 1)
                    # empty: every consumer thread releases the slot.
                    cute.arch.mbarrier_init(empty_bar + s, self.num_consumer_threads)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        # (64, 64, k_tiles) view of this CTA's rows of A.
        gA = cute.local_tile(mA_tma, (self.tile_m, self.tile_k), (bidx, None))
        k_tile_cnt = cute.size(gA, mode=[2])
        # TMA views: mode 0 is one whole 64 x 64 box, then k tiles (gmem) or stages (smem).
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a,
            0,
            cute.make_layout(1),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )

        if warp_idx == self.producer_warp:
            stage = 0
            phase = 1
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(empty_bar + stage, phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full_bar + stage, self.tile_bytes)
                # Whole warp issues the copy; the DSL elects the issuing lane.
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
                # Our reads of the slot are done: let the producer refill it.
                cute.arch.mbarrier_arrive(empty_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
            mOut[bidx * self.tile_m + row] = acc
