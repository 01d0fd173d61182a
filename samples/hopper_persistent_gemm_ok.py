# cutespin-expect: kernel=PersistentWgmmaGemm.kernel verdict=verified
"""A warp-specialized persistent Hopper GEMM whose launch shape is a host choice.

The block size is not a literal: it is one producer warp group plus as many MMA warp groups as
the host's atom layout asks for, and that layout depends on the tile shape given to the
constructor. cutespin cannot fold it, so it takes the fewest whole warp groups that reach every
warp-dependent branch (here the producer group and one MMA group: 256 threads).

Warp 0 streams A and B k-tiles through a ``PipelineTmaAsync`` ring for every tile the static
persistent scheduler hands this CTA. The MMA warp groups keep one wgmma group in flight
(``k_pipe_mmas = 1``): a prologue issues the first k-tile (``min(k_pipe_mmas, k_tile_cnt)``
trips) and the main loop releases each stage only after ``wait_group`` retired the MMAs that read
it. The epilogue writes C through a ring of staged SMEM buffers; the buffer of an epilogue tile
is ``(tiles done * tiles per C tile + i) % stages``, so consecutive tiles rotate through the ring
and the TMA store pipeline's ``producer_acquire`` (at most ``stages - 1`` stores still reading)
keeps a buffer from being rewritten while its store still reads it.

Expected: correct.
"""

import math

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import cpasync


class PersistentWgmmaGemm:
    def __init__(self, tile_shape_mn):
        self.tile_m, self.tile_n = tile_shape_mn
        self.tile_k = 64
        # Two MMA warp groups split a tall tile; a short tile needs one.
        self.atom_layout_mnk = (2, 1, 1) if self.tile_m > 64 and self.tile_n > 128 else (1, 1, 1)
        self.num_mma_warp_groups = math.prod(self.atom_layout_mnk)
        self.threads_per_warp_group = 128
        self.threads = (1 + self.num_mma_warp_groups) * self.threads_per_warp_group
        self.num_mma_threads = self.num_mma_warp_groups * self.threads_per_warp_group
        self.load_warp = 0
        self.store_warp = 4  # the first warp of the first MMA warp group
        self.ab_stages = 2
        self.epi_stages = 2
        self.stage_bytes = (self.tile_m + self.tile_n) * self.tile_k * 2
        self.epilogue_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=self.num_mma_threads)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, max_ctas: cutlass.Int32):
        a_layout = cute.make_layout((self.tile_m, self.tile_k), stride=(self.tile_k, 1))
        b_layout = cute.make_layout((self.tile_n, self.tile_k), stride=(self.tile_k, 1))
        c_layout = cute.make_layout((self.tile_m, 32), stride=(32, 1))
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, a_layout,
                                                    (self.tile_m, self.tile_k))
        tma_b, gB_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mB, b_layout,
                                                    (self.tile_n, self.tile_k))
        tma_c, gC_tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC, c_layout,
                                                    (self.tile_m, 32))
        sched_params = utils.PersistentTileSchedulerParams(
            (cute.ceil_div(cute.size(mC, mode=[0]), self.tile_m),
             cute.ceil_div(cute.size(mC, mode=[1]), self.tile_n), 1),
            (1, 1, 1),
        )
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, max_ctas)
        self.kernel(tma_a, gA_tma, tma_b, gB_tma, tma_c, gC_tma, sched_params).launch(
            grid=grid, block=(self.threads, 1, 1), cluster=(1, 1, 1)
        )

    # Three trips of each runtime loop already wrap both rings; more only grow the state space.
    # (Without the pin, at the default bound 5, it is verified too: 225,437 states, about 10 s.)
    # cutespin: loop=3
    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               tma_c: cute.CopyAtom, mC: cute.Tensor, sched_params: utils.PersistentTileSchedulerParams):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        warp_group = cute.arch.make_warp_uniform(tidx // self.threads_per_warp_group)

        smem = cutlass.utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.ab_stages)
        sA = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((self.tile_m, self.tile_k, self.ab_stages),
                             stride=(self.tile_k, 1, self.tile_m * self.tile_k)),
            byte_alignment=1024,
        )
        sB = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((self.tile_n, self.tile_k, self.ab_stages),
                             stride=(self.tile_k, 1, self.tile_n * self.tile_k)),
            byte_alignment=1024,
        )
        sC = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((self.tile_m, 32, self.epi_stages), stride=(32, 1, self.tile_m * 32)),
            byte_alignment=1024,
        )

        # One arrival per MMA warp releases a stage; the count follows the host's layout.
        mma_warps = self.num_mma_warp_groups * 4
        ab_pipeline = pipeline.PipelineTmaAsync.create(
            num_stages=self.ab_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mma_warps),
            tx_count=self.stage_bytes,
            barrier_storage=barriers,
        )

        gA = cute.local_tile(mA, (self.tile_m, self.tile_k), (None, None, None))
        gB = cute.local_tile(mB, (self.tile_n, self.tile_k), (None, None, None))
        gC = cute.local_tile(mC, (self.tile_m, 32), (None, None, None))
        k_tile_cnt = cute.size(gA, mode=[3])
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2),
                                           cute.group_modes(gB, 0, 2))
        bSG_sC, bSG_gC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                               cute.group_modes(gC, 0, 2))
        cute.arch.sync_threads()

        if warp_group == 0:
            cute.arch.setmaxregister_decrease(40)
        if warp_idx == self.load_warp:
            sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                               cute.arch.grid_dim())
            tile = sched.initial_work_tile_info()
            produce = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.ab_stages)
            while tile.is_valid_tile:
                m, n, _ = tile.tile_idx
                produce.reset_count()
                for k in cutlass.range(k_tile_cnt):
                    ab_pipeline.producer_acquire(produce)
                    bar = ab_pipeline.producer_get_barrier(produce)
                    cute.copy(tma_a, tAgA[(None, m, produce.count, 0)], tAsA[(None, produce.index)],
                              tma_bar_ptr=bar)
                    cute.copy(tma_b, tBgB[(None, n, produce.count, 0)], tBsB[(None, produce.index)],
                              tma_bar_ptr=bar)
                    ab_pipeline.producer_commit(produce)
                    produce.advance()
                sched.advance_to_next_work()
                tile = sched.get_current_work()
            ab_pipeline.producer_tail(produce)

        if warp_group > 0:
            cute.arch.setmaxregister_increase(232)
            mma_tidx = tidx - self.threads_per_warp_group
            tiled_mma = cute.make_tiled_mma(cute.nvgpu.warpgroup.MmaF16BF16Op(
                cutlass.Float16, cutlass.Float32, (64, self.tile_n, 16),
                cute.nvgpu.warpgroup.OperandSource.SMEM,
                cute.nvgpu.warpgroup.OperandMajorMode.K, cute.nvgpu.warpgroup.OperandMajorMode.K),
                self.atom_layout_mnk)
            thr_mma = tiled_mma.get_slice(mma_tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_fragment(thr_mma.partition_shape_C((self.tile_m, self.tile_n)), cutlass.Float32)
            r2s = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16),
                                         tiled_mma)
            tRS_sC = r2s.get_slice(mma_tidx).partition_D(sC)
            tRS_rC = cute.make_fragment(cute.size(tRS_sC, mode=[0]), cutlass.Float16)
            store_pipeline = pipeline.PipelineTmaStore.create(
                num_stages=self.epi_stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.num_mma_threads),
            )

            sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                               cute.arch.grid_dim())
            tile = sched.initial_work_tile_info()
            reading = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stages)
            releasing = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stages)
            k_pipe_mmas = 1
            prologue_mma_cnt = min(k_pipe_mmas, k_tile_cnt)
            while tile.is_valid_tile:
                m, n, _ = tile.tile_idx
                reading.reset_count()
                releasing.reset_count()
                acc.fill(0.0)
                cute.nvgpu.warpgroup.fence()
                for k in cutlass.range(prologue_mma_cnt):
                    ab_pipeline.consumer_wait(reading)
                    cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, reading.index)],
                              tCrB[(None, None, 0, reading.index)], acc)
                    cute.nvgpu.warpgroup.commit_group()
                    reading.advance()
                for k in cutlass.range(prologue_mma_cnt, k_tile_cnt):
                    ab_pipeline.consumer_wait(reading)
                    cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, reading.index)],
                              tCrB[(None, None, 0, reading.index)], acc)
                    cute.nvgpu.warpgroup.commit_group()
                    # The group of the previous k-tile is retired: its stage can be refilled.
                    cute.nvgpu.warpgroup.wait_group(k_pipe_mmas)
                    ab_pipeline.consumer_release(releasing)
                    releasing.advance()
                    reading.advance()
                cute.nvgpu.warpgroup.wait_group(0)
                for k in cutlass.range(prologue_mma_cnt):
                    ab_pipeline.consumer_release(releasing)
                    releasing.advance()

                # Epilogue: C leaves through a ring of SMEM buffers, one TMA store per sub-tile.
                epi_tiles = cute.size(gC, mode=[3])
                done_before = sched.num_tiles_executed * epi_tiles
                for i in cutlass.range(epi_tiles):
                    buf = (done_before + i) % cute.size(tRS_sC, mode=[3])
                    tRS_rC.store(acc.load().to(cutlass.Float16))
                    cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, buf)])
                    cute.arch.fence_proxy("async.shared", space="cta")
                    self.epilogue_barrier.arrive_and_wait()
                    if warp_idx == self.store_warp:
                        cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, m, n + i, 0)])
                        store_pipeline.producer_commit()
                        store_pipeline.producer_acquire()
                    self.epilogue_barrier.arrive_and_wait()

                sched.advance_to_next_work()
                tile = sched.get_current_work()
            store_pipeline.producer_tail()
