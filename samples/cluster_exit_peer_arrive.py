# cutespin-expect: kernel=ClusterPairSum.kernel verdict=counterexample kinds=exit lines=68,65
"""Pairwise row sums across a two-CTA cluster: CTA 1 reads CTA 0's row through DSMEM.

Each (2, 1, 1) cluster handles rows 2c and 2c + 1 of X. Both CTAs stage their row in shared
memory and meet on a cluster barrier (release/acquire), then CTA 1 reads CTA 0's row through
DSMEM, writes the sum, and tells CTA 0 that it is done with its shared memory by arriving,
cluster-scoped, on CTA 0's ``done`` barrier.

BUG: CTA 0 never waits on ``done`` (and there is no trailing cluster barrier): it falls off the
end of the kernel right after the first cluster barrier. CTA 1 can then read the shared memory of
an exited CTA and arrive on a barrier in it.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import nvvm


class ClusterPairSum:
    def __init__(self):
        self.row_len = 64
        self.threads = 64  # one element per thread
        self.cluster_n = 2

    @cute.jit
    def __call__(self, mX: cute.Tensor, mOut: cute.Tensor, stream: cuda.CUstream):
        # mX: (2 * pairs, 64) fp32; mOut: (pairs, 64) fp32.
        num_pairs = cute.size(mOut, mode=[0])
        self.kernel(mX, mOut).launch(
            grid=(self.cluster_n * num_pairs, 1, 1),
            block=(self.threads, 1, 1),
            cluster=(self.cluster_n, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())

        smem = cutlass.utils.SmemAllocator()
        done_bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout(self.row_len), byte_alignment=16)

        if warp_idx == 0:
            with cute.arch.elect_one():
                # Every thread of CTA 1 reports back once.
                cute.arch.mbarrier_init(done_bar, self.threads)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

        sX[tidx] = mX[bidx, tidx]
        # Publish both staged rows to the whole cluster.
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

        if cta_rank == 1:
            # CTA 0's row, read in place through DSMEM.
            rX = cute.arch.map_dsmem_ptr(sX.iterator, 0)
            x0 = (rX + tidx).load()
            mOut[bidx // 2, tidx] = x0 + sX[tidx]
            # Done with CTA 0's shared memory.
            cute.arch.mbarrier_arrive(done_bar, peer_cta_rank_in_cluster=0, scope=nvvm.MemScopeKind.CLUSTER)
