# cutespin-expect: kernel=RowBroadcastRace.kernel verdict=counterexample kinds=race lines=61
"""BUG: cp_async_pipeline_noinc_ok.py with a PipelineAsync instead of a PipelineCpAsync.

PipelineAsync's ``producer_commit`` is a plain ``mbarrier.arrive``: it fires at once, before the
producer's cp.async copies have landed, and the producer never calls ``cp_async_wait_group``. A
consumer that passes ``consumer_wait`` can read the row while the copies are still in flight.

Expected: CS201 at the consumers' read.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync


class RowBroadcastRace:
    def __init__(self):
        self.stages = 2
        self.threads = 128

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
        self.kernel(mX, mY).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()
        mbar = smem.allocate_array(cutlass.Int64, self.stages * 2)
        sRow = smem.allocate_tensor(cutlass.Float32, cute.make_layout((4, 32, 2), stride=(32, 1, 128)), 16)
        pipe = pipeline.PipelineAsync.create(
            barrier_storage=mbar,
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 96),
        )
        cute.arch.sync_threads()
        rows = cute.size(mX, mode=[0])
        if warp_idx == 0:
            atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
            tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((1, 32)), cute.make_layout((4, 1)))
            thr = tiled.get_slice(tidx)
            tRsR = thr.partition_D(sRow)
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            for r in range(rows):
                pipe.producer_acquire(st)
                tRgX = thr.partition_S(cute.local_tile(mX, (4, 32), (r, 0)))
                cute.copy(tiled, tRgX, tRsR[None, None, None, st.index])
                pipe.producer_commit(st)
                st.advance()
        else:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            acc = cutlass.Float32(0.0)
            for r in range(rows):
                pipe.consumer_wait(st)
                row = sRow[None, None, st.index]
                acc = acc + row.load().reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0)
                pipe.consumer_release(st)
                st.advance()
            mY[tidx] = acc
