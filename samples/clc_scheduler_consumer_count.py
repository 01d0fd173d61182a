# cutespin-expect: kernel=ClcPersistentScale.kernel verdict=counterexample kinds=deadlock lines=75
"""The CLC persistent kernel of ``clc_scheduler_ok.py`` with the scheduler warp left out of the
``PipelineClcFetchAsync`` consumer count.

BUG: the scheduler warp consumes every response too (``consumer_wait`` / ``consumer_release``),
so each phase of ``empty[s]`` receives 96 arrivals, but the group is sized for the two worker
warps only (64). The phase completes before every consumer has released, the scheduler
reuses the slot for the next query while a worker is still one response behind, and with two
stages a worker ends up waiting for a ``full[s]`` parity that has already come and gone.
The consumer group must count every consumer thread (scheduler + workers; in a cluster, the
consumers of every CTA, since all release on CTA 0).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils


class ClcPersistentScale:
    def __init__(self):
        self.num_clc_stage = 2
        self.clc_response_bytes = 16
        self.worker_warp_ids = (0, 1)
        self.sched_warp_id = 2
        self.threads = 32 * 3

    @cute.jit
    def __call__(self, mX: cute.Tensor, sched_params: utils.ClcDynamicPersistentTileSchedulerParams):
        self.kernel(mX, sched_params).launch(grid=(8, 1, 1), block=(self.threads, 1, 1), cluster=(1, 1, 1))

    @cute.kernel
    def kernel(self, mX: cute.Tensor, sched_params: utils.ClcDynamicPersistentTileSchedulerParams):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()

        smem = utils.SmemAllocator()
        clc_mbar = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_clc_stage)
        clc_response = smem.allocate_array(cutlass.Int32, num_elems=4)

        consumer_threads = 32 * len(self.worker_warp_ids)  # BUG: the scheduler warp releases too
        clc_pipeline = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=clc_mbar,
            num_stages=self.num_clc_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_threads),
            tx_count=self.clc_response_bytes,
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        )
        tile_sched = utils.ClcDynamicPersistentTileScheduler.create(
            sched_params, cute.arch.block_idx(), cute.arch.grid_dim(), clc_response
        )
        work_tile = tile_sched.initial_work_tile_info()
        consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_clc_stage)

        if warp_idx == self.sched_warp_id:
            producer_state = pipeline.make_pipeline_state(
                pipeline.PipelineUserType.ProducerConsumer, self.num_clc_stage
            )
            while work_tile.is_valid_tile:
                clc_pipeline.producer_acquire(producer_state)
                tile_sched.advance_to_next_work(clc_pipeline.producer_get_barrier(producer_state))
                producer_state.advance()

                clc_pipeline.consumer_wait(consumer_state)
                work_tile = tile_sched.get_current_work()
                clc_pipeline.consumer_release(consumer_state)
                consumer_state.advance()
            clc_pipeline.producer_tail(producer_state)
        else:
            while work_tile.is_valid_tile:
                row = work_tile.tile_idx[0] * 64 + tidx
                mX[row] = mX[row] * 2.0

                clc_pipeline.consumer_wait(consumer_state)
                work_tile = tile_sched.get_current_work()
                clc_pipeline.consumer_release(consumer_state)
                consumer_state.advance()
