# cutespin-expect: kernel=ClcRawPersistentScale.kernel verdict=counterexample kinds=race lines=60
"""A persistent kernel that drives cluster launch control (CLC) by hand, as cuDNN's frost GEMMs do.

Warp 0 is the scheduler: for every tile it waits until the response slot is free (``empty``),
arms ``full`` with the 16 response bytes and asks the hardware for the next tile
(``issue_clc_query``, an asynchronous write of the response that completes those bytes). Every
warp, the scheduler included, waits on ``full``, decodes the response with ``clc_response`` (plain
shared-memory loads) and frees the slot with one elected arrive on ``empty``.

BUG: the arrive that frees the slot is ``relaxed=True``. A relaxed arrive orders none of the
thread's earlier loads (PTX ``mbarrier.arrive.relaxed``), so the scheduler's next query may
overwrite the response while a worker's decode is still reading it: a write-after-read race on
``response``. cuDNN's own tile-DSL scheduler frees its tile-id slot with a release arrive for
exactly this reason ("a relaxed arrive would let the refill race a still-in-flight decode").
Fix: drop ``relaxed=True`` (a CTA-scope release is enough here).
"""

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.experimental.primitives as nvvm


class ClcRawPersistentScale:
    def __init__(self):
        self.threads = 32 * 3

    @cute.jit
    def __call__(self, mX: cute.Tensor):
        self.kernel(mX).launch(grid=(8, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mX: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()

        smem = utils.SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, num_elems=1)
        empty = smem.allocate_array(cutlass.Int64, num_elems=1)
        response = smem.allocate_array(cutlass.Int32, num_elems=4, byte_alignment=16)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 1)
                cute.arch.mbarrier_init(empty, 3)  # one elected arrive per warp
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        tile = bid
        phase = cutlass.Int32(0)
        is_valid = cutlass.Boolean(True)
        while is_valid:
            if warp_idx != 0:
                row = tile * 64 + tidx - 32
                mX[row] = mX[row] * 2.0
            if warp_idx == 0:
                cute.arch.mbarrier_wait(empty, phase ^ 1)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full, 16)
                    cute.arch.issue_clc_query(full, response)
            cute.arch.mbarrier_wait(full, phase)
            m, n, l, is_valid = cute.arch.clc_response(response)
            tile = m
            with cute.arch.elect_one():
                nvvm.mbarrier_arrive(empty, relaxed=True)
            phase ^= 1
