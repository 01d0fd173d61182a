# cutespin-expect: kernel=ClusterJacobi.kernel verdict=verified
"""Two-CTA cluster Jacobi smoother with a DSMEM halo exchange.

Each CTA of a (2, 1, 1) cluster owns a 4 x 32 strip of an 8 x 32 grid, one row per warp. Local
row 0 is the row next to the cluster interface in both CTAs (CTA 0 keeps its rows mirrored), so
warp 0 always does the exchange. Every iteration it:
  1. waits until the peer has retired our previous row from its halo slot (``halo_empty``),
  2. pushes its row 0 into the peer's halo slot with plain DSMEM stores,
  3. arrives remotely on the peer's ``halo_full`` barrier (cluster scope: it publishes DSMEM data),
  4. waits on its own ``halo_full`` for the peer's row, reads it, and hands the slot back with a
     remote, cluster-scoped arrive on the peer's ``halo_empty``.
The halo ring has two slots, so a CTA can run at most one iteration ahead of its peer. The strip
itself is ping-ponged between two smem buffers with one CTA barrier per iteration.

The last two ``halo_empty`` arrivals of each CTA are never waited on by their target, so the kernel
ends with a cluster barrier: no CTA exits while its peer can still arrive on its barriers.

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import nvvm


class ClusterJacobi:
    def __init__(self):
        self.cols = 32  # one column per lane
        self.num_warps = 4  # one strip row per warp
        self.threads = 32 * self.num_warps
        self.cluster_n = 2
        self.stages = 2  # halo slots per direction

    @cute.jit
    def __call__(
        self,
        mIn: cute.Tensor,
        mOut: cute.Tensor,
        num_iters: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        # mIn / mOut: (8, 32) fp32; rows 0..3 belong to CTA 0, rows 4..7 to CTA 1.
        self.kernel(mIn, mOut, num_iters).launch(
            grid=(self.cluster_n, 1, 1),
            block=(self.threads, 1, 1),
            cluster=(self.cluster_n, 1, 1),
            stream=stream,
        )

    @cute.kernel
    def kernel(self, mIn: cute.Tensor, mOut: cute.Tensor, num_iters: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        peer = 1 - cta_rank

        smem = cutlass.utils.SmemAllocator()
        halo_full = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        halo_empty = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        # Ping-pong copies of the strip: (row, col, buffer).
        sU = smem.allocate_tensor(
            cutlass.Float32,
            cute.make_layout((self.num_warps, self.cols, 2)),
            byte_alignment=16,
        )
        # Halo slots, written by the peer CTA: (col, slot).
        sHalo = smem.allocate_tensor(
            cutlass.Float32, cute.make_layout((self.cols, self.stages)), byte_alignment=16
        )

        if warp_idx == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(self.stages):
                    # The peer's 32 exchange lanes arrive once each per use of a slot.
                    cute.arch.mbarrier_init(halo_full + s, 32)
                    cute.arch.mbarrier_init(halo_empty + s, 32)
        cute.arch.mbarrier_init_fence()
        # The peer arrives on our barriers: both CTAs must have initialised theirs first.
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

        # Local row r is tile row 3 - r in CTA 0 and tile row r in CTA 1.
        gIn = cute.local_tile(mIn, (self.num_warps, self.cols), (cta_rank, 0))
        gOut = cute.local_tile(mOut, (self.num_warps, self.cols), (cta_rank, 0))
        tile_row = warp_idx + (1 - cta_rank) * (self.num_warps - 1 - 2 * warp_idx)
        u0 = sU[None, None, 0]
        u0[warp_idx, lane] = gIn[tile_row, lane]
        cute.arch.sync_threads()

        cur = 0
        stage = 0
        full_phase = 0
        empty_phase = 1  # slots start free, so the first wait on each empty barrier passes
        for it in cutlass.range(num_iters):
            nxt = 1 - cur
            uc = sU[None, None, cur]
            un = sU[None, None, nxt]

            h = cutlass.Float32(0.0)
            if warp_idx == 0:
                # Push our interface row once the peer has retired the slot's last contents.
                cute.arch.mbarrier_wait(halo_empty + stage, empty_phase)
                # The same slot in the peer's smem: stores through this pointer are DSMEM stores.
                peer_slot = cute.arch.map_dsmem_ptr(sHalo[None, stage].iterator, peer)
                (peer_slot + lane).store(uc[0, lane])
                cute.arch.mbarrier_arrive(
                    halo_full + stage,
                    peer_cta_rank_in_cluster=peer,
                    scope=nvvm.MemScopeKind.CLUSTER,
                )
                # Take the peer's interface row out of our slot, then hand the slot back.
                cute.arch.mbarrier_wait(halo_full + stage, full_phase)
                my_slot = sHalo[None, stage]
                h = my_slot[lane]
                cute.arch.mbarrier_arrive(
                    halo_empty + stage,
                    peer_cta_rank_in_cluster=peer,
                    scope=nvvm.MemScopeKind.CLUSTER,
                )

            # 5-point Jacobi sweep, periodic in x.
            centre = uc[warp_idx, lane]
            left = uc[warp_idx, (lane + self.cols - 1) % self.cols]
            right = uc[warp_idx, (lane + 1) % self.cols]
            # Towards the interface: the peer's row for row 0, our own row above otherwise.
            up = h
            if warp_idx > 0:
                up = uc[warp_idx - 1, lane]
            # Away from the interface: zero-flux outer boundary.
            down = centre
            if warp_idx < self.num_warps - 1:
                down = uc[warp_idx + 1, lane]
            un[warp_idx, lane] = 0.25 * (up + down + left + right)

            # Everyone's reads of uc end before it is overwritten next iteration.
            cute.arch.sync_threads()
            cur = nxt
            stage = stage + 1
            if stage == self.stages:
                stage = 0
                full_phase ^= 1
                empty_phase ^= 1

        uf = sU[None, None, cur]
        gOut[tile_row, lane] = uf[warp_idx, lane]

        # The peer's last halo_empty arrivals on our barriers are never waited on: stay resident
        # until both CTAs are past their final remote arrive.
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
