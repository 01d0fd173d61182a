# cutespin-expect: kernel=kernel verdict=verified
"""A 2-CTA (cta_group::2) Blackwell GEMM: one MMA issued by the pair's leader CTA for both CTAs.

Cluster (2, 1, 1) with a 2-CTA tiled MMA, so ``cta_layout_vmnk`` = ((2), 1, 1, 1): the two CTAs
are one pair, CTA 0 (V coordinate 0) its leader.

* ``PipelineTmaUmma`` (A/B stages). Warp 0 of each CTA loads its own halves of A and B with
  2-CTA TMA copies; their bytes complete on the *leader's* full barrier, which only the leader
  arms (``tx_count`` covers both CTAs). Only the leader waits on it and issues the MMAs, which
  read both CTAs' shared memory; its ``consumer_release`` is a ``tcgen05.commit`` multicast to
  the empty barrier of both CTAs, so each CTA refills a stage only once the MMAs reading it are
  done.
* ``PipelineUmmaAsync`` (accumulator, 1 stage, one per tile). The leader's commit arrives on the
  full barrier of both CTAs (each holds half of the accumulator in its TMEM); every epilogue
  thread of both CTAs releases on the leader's empty barrier, so the consumer group counts the
  threads of both CTAs.
* ``TmemAllocator(is_two_cta=True)``: each CTA allocates its TMEM; before freeing, the two
  allocator warps meet on the dealloc mbarrier.

Expected: correct.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import cpasync, tcgen05

cluster_shape_mnk = (2, 1, 1)
threads_per_cta = 64
ab_stages = 2


@cute.struct
class SharedStorage:
    ab_mbar: cute.struct.MemRange[cutlass.Int64, ab_stages * 2]
    acc_mbar: cute.struct.MemRange[cutlass.Int64, 2]
    tmem_dealloc_mbar: cutlass.Int64
    tmem_holding_buf: cutlass.Int32


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, tma_atom_a: cute.CopyAtom, mA: cute.Tensor, tma_atom_b: cute.CopyAtom,
           mB: cute.Tensor, mC: cute.Tensor, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout,
           cta_layout_vmnk: cute.Layout, num_tiles: cutlass.Int32, num_k_tiles: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bidx, _, _ = cute.arch.block_idx()
    is_leader_cta = bidx % cute.size(cta_layout_vmnk, mode=[0]) == 0

    smem = utils.SmemAllocator()
    storage = smem.allocate(SharedStorage)
    sA = smem.allocate_tensor(element_type=cutlass.Float16, layout=a_layout.outer, byte_alignment=128,
                              swizzle=a_layout.inner)
    sB = smem.allocate_tensor(element_type=cutlass.Float16, layout=b_layout.outer, byte_alignment=128,
                              swizzle=b_layout.inner)

    tx_bytes = (cute.size_in_bytes(cutlass.Float16, a_layout) + cute.size_in_bytes(cutlass.Float16, b_layout)) \
        * cute.size(cta_layout_vmnk, mode=[0])
    ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
        num_stages=ab_stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
        tx_count=tx_bytes,
        barrier_storage=storage.ab_mbar.data_ptr(),
        cta_layout_vmnk=cta_layout_vmnk,
    ).make_participants()
    acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(
            pipeline.Agent.Thread, cute.size(cta_layout_vmnk, mode=[0]) * threads_per_cta),
        barrier_storage=storage.acc_mbar.data_ptr(),
        cta_layout_vmnk=cta_layout_vmnk,
    ).make_participants()

    tmem_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=threads_per_cta)
    tmem = utils.TmemAllocator(storage.tmem_holding_buf.ptr, barrier_for_retrieve=tmem_barrier,
                               is_two_cta=cute.size(cta_layout_vmnk, mode=[0]) > 1,
                               two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_mbar.ptr)
    tmem.allocate(256)
    tmem.wait_for_alloc()
    tmem_ptr = tmem.retrieve_ptr(cutlass.Float32)
    tCtAcc = cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C((128, 128)).layout)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)

    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32),
                                 tCtAcc)
    tTR_tAcc = t2r.get_slice(tidx).partition_S(tCtAcc)
    tTR_rAcc = cute.make_rmem_tensor(tTR_tAcc.shape, cutlass.Float32)

    for tile in cutlass.range(num_tiles):
        if warp_idx == 0:
            if is_leader_cta:
                acc_producer.acquire_and_advance()
            for k in cutlass.range(num_k_tiles):
                ab_empty = ab_producer.acquire_and_advance()
                cute.copy(tma_atom_a, mA[(None, k)], sA[(None, ab_empty.index)], tma_bar_ptr=ab_empty.barrier)
                cute.copy(tma_atom_b, mB[(None, k)], sB[(None, ab_empty.index)], tma_bar_ptr=ab_empty.barrier)
                if is_leader_cta:
                    ab_full = ab_consumer.wait_and_advance()
                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, ab_full.index)],
                              tCrB[(None, None, 0, ab_full.index)], tCtAcc)
                    ab_full.release()
            if is_leader_cta:
                acc_producer.commit()
        acc_full = acc_consumer.wait_and_advance()
        cute.copy(t2r, tTR_tAcc, tTR_rAcc)
        cute.arch.fence_view_async_tmem_load()
        acc_full.release()
        mC[tile * threads_per_cta + tidx] = tTR_rAcc[0]

    if warp_idx == 0:
        ab_producer.tail()
        if is_leader_cta:
            acc_producer.tail()
    tmem.relinquish_alloc_permit()
    pipeline.sync(barrier_id=1)
    tmem.free(tmem_ptr)


@cute.jit
def host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, num_tiles: cutlass.Int32, num_k_tiles: cutlass.Int32):
    op = tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (256, 128, 16), tcgen05.CtaGroup.TWO,
                              tcgen05.OperandSource.SMEM, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K)
    tiled_mma = cute.make_tiled_mma(op)
    cta_layout_vmnk = cute.tiled_divide(cute.make_layout(cluster_shape_mnk), (tiled_mma.thr_id,))
    tma_op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.TWO)
    a_layout = cute.make_layout((128, 64, ab_stages))
    b_layout = cute.make_layout((64, 64, ab_stages))
    tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(tma_op, a, a_layout, (256, 128, 64), tiled_mma,
                                                         cta_layout_vmnk.shape)
    tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(tma_op, b, b_layout, (256, 128, 64), tiled_mma,
                                                         cta_layout_vmnk.shape)
    kernel(tiled_mma, tma_atom_a, tma_a, tma_atom_b, tma_b, c, a_layout, b_layout, cta_layout_vmnk,
           num_tiles, num_k_tiles).launch(grid=(2, 1, 1), block=(threads_per_cta, 1, 1), cluster=cluster_shape_mnk)
