# cutespin-expect: kernel=StagedScale.kernel verdict=counterexample kinds=race lines=58,52
"""Scale rows through a 2-stage ``PipelineAsync`` using the participants / handle API.

Warp 0 produces: for each row it acquires a slot (``acquire_and_advance``), every lane writes one
element of the row into the slot, and the handle is committed. Warp 1 consumes: it waits for the
slot (``wait_and_advance``), reads the row, writes it out and releases the handle.

BUG: the producer group is sized for one arrival (``Agent.Thread`` with the default size 1) and the
commit is made by the elected lane only. ``PipelineAsync.producer_commit`` is a plain arrive of
the calling thread, which releases that thread's own stores: the other 31 lanes' stores to the
slot are not ordered before the consumer's reads. Either every lane commits (size 32) or the warp
synchronises (``sync_warp``) before the elected commit.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


class StagedScale:
    def __init__(self):
        self.cols = 32
        self.num_stages = 2

    @cute.jit
    def __call__(self, mX: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32):
        self.kernel(mX, mY, num_rows).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mY: cute.Tensor, num_rows: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()

        smem = cutlass.utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, num_elems=2 * self.num_stages)
        sRow = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((self.cols, self.num_stages)), byte_alignment=16
        )
        producer, consumer = pipeline.PipelineAsync.create(
            num_stages=self.num_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            barrier_storage=barriers,
        ).make_participants()

        if warp_idx == 0:
            for r in cutlass.range(num_rows):
                handle = producer.acquire_and_advance()
                slot = sRow[None, handle.index]
                slot[lane] = mX[r, lane] * 2.0
                with cute.arch.elect_one():
                    handle.commit()
            producer.tail()
        else:
            for r in cutlass.range(num_rows):
                handle = consumer.wait_and_advance()
                slot = sRow[None, handle.index]
                mY[r, lane] = slot[lane]
                handle.release()
