# cutespin-expect: kernel=TmemHandoff.kernel verdict=verified
"""The TMEM allocation handoff of a Blackwell kernel.

Warp 0 allocates tensor memory with ``TmemAllocator.allocate``: ``alloc_tmem`` writes the TMEM
base address into the shared-memory word ``tmem_holding_buf``. Every warp passes the allocator's
retrieve barrier (``wait_for_alloc``, named barrier 1 over the 128 threads) before reading that
word with ``retrieve_ptr``. At the end the warps meet at the same barrier again before warp 0
frees the columns.

The kernel never loads from or MMAs into the columns, so the TMEM contents play no part here
(tmem_load_fence_ok.py and tmem_dealloc_ok.py model them).

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils


@cute.struct
class SharedStorage:
    tmem_holding_buf: cutlass.Int32


class TmemHandoff:
    def __init__(self):
        self.threads = 128

    @cute.jit
    def __call__(self, mC: cute.Tensor, stream: cuda.CUstream):
        self.kernel(mC).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mC: cute.Tensor):
        smem = utils.SmemAllocator()
        storage = smem.allocate(SharedStorage)
        alloc_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=self.threads)
        tmem = utils.TmemAllocator(
            storage.tmem_holding_buf.ptr,
            barrier_for_retrieve=alloc_barrier,
            allocator_warp_id=0,
        )
        tmem.allocate(512)
        tmem.wait_for_alloc()
        tmem_ptr = tmem.retrieve_ptr(cutlass.Float32)
        acc = cute.make_tensor(tmem_ptr, cute.make_layout((128, 512)))
        tmem.relinquish_alloc_permit()
        alloc_barrier.arrive_and_wait()
        tmem.free(tmem_ptr)
