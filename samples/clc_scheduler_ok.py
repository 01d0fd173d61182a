# cutespin-expect: kernel=ClcPersistentScale.kernel verdict=verified
"""A persistent kernel driven by the cluster launch control (CLC) tile scheduler.

Warp 2 is the scheduler: for every tile it ``producer_acquire``s a slot of the
``PipelineClcFetchAsync`` (waits ``empty[s]``, then arms ``full[s]`` with the 16 response bytes),
asks the hardware for the next tile (``advance_to_next_work`` on ``producer_get_barrier``: the
response completes those bytes), and then, like every worker warp, consumes the response:
``consumer_wait``, ``get_current_work``, ``consumer_release`` (each thread arrives on CTA 0's
``empty[s]``), ``advance``. The empty barrier therefore counts every thread of the scheduler and
worker warps. All warps see the same sequence of tiles, so their ``while work_tile.is_valid_tile``
loops run the same number of times. ``producer_tail`` keeps the CTA alive until the last slot
is released.
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

        consumer_threads = 32 * len((self.sched_warp_id, *self.worker_warp_ids))
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
