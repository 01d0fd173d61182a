# cutespin-expect: kernel=kernel verdict=counterexample kinds=race lines=79
"""A warp-specialized Blackwell (tcgen05) GEMM whose A/B ring is the wrong pipeline class.

Warp 0 loads A and B tiles with TMA into a 2-stage ring; warp 1 waits for each stage, issues the
tcgen05 MMA on it and releases it; the four warps read the accumulator back through
``PipelineUmmaAsync``.

The bug: the ring is a ``PipelineTmaAsync``, whose ``consumer_release`` is a plain mbarrier
arrive, instead of a ``PipelineTmaUmma``, whose ``consumer_release`` is a ``tcgen05.commit``. A
tcgen05 MMA reads its operands from shared memory after ``cute.gemm`` returns; only the commit
arrives once it is done. With the plain arrive the producer may refill the stage while the MMA
still reads it (write-after-read race): wrong results, intermittently.

Fix: ``pipeline.PipelineTmaUmma.create(...)`` (``umma_mma_after_wait_ok.py``).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import cpasync, tcgen05

threads_per_cta = 128
ab_stages = 2


@cute.struct
class SharedStorage:
    ab_mbar: cute.struct.MemRange[cutlass.Int64, ab_stages * 2]
    acc_mbar: cute.struct.MemRange[cutlass.Int64, 2]
    tmem_holding_buf: cutlass.Int32


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, tma_atom_a: cute.CopyAtom, mA: cute.Tensor, tma_atom_b: cute.CopyAtom,
           mB: cute.Tensor, mC: cute.Tensor, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout,
           num_k_tiles: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())

    smem = utils.SmemAllocator()
    storage = smem.allocate(SharedStorage)
    sA = smem.allocate_tensor(element_type=cutlass.Float16, layout=a_layout.outer, byte_alignment=128,
                              swizzle=a_layout.inner)
    sB = smem.allocate_tensor(element_type=cutlass.Float16, layout=b_layout.outer, byte_alignment=128,
                              swizzle=b_layout.inner)

    tx_bytes = cute.size_in_bytes(cutlass.Float16, a_layout) + cute.size_in_bytes(cutlass.Float16, b_layout)
    ab_producer, ab_consumer = pipeline.PipelineTmaAsync.create(
        num_stages=ab_stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
        tx_count=tx_bytes,
        barrier_storage=storage.ab_mbar.data_ptr(),
    ).make_participants()
    acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
        num_stages=1,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads_per_cta),
        barrier_storage=storage.acc_mbar.data_ptr(),
    ).make_participants()

    tmem = utils.TmemAllocator(storage.tmem_holding_buf.ptr,
                               barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=threads_per_cta))
    tmem.allocate(128)
    tmem.wait_for_alloc()
    tCtAcc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), tiled_mma.make_fragment_C((128, 128)).layout)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)

    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32),
                                 tCtAcc)
    tTR_tAcc = t2r.get_slice(tidx).partition_S(tCtAcc)
    tTR_rAcc = cute.make_rmem_tensor(tTR_tAcc.shape, cutlass.Float32)

    if warp_idx == 0:
        for k in cutlass.range(num_k_tiles):
            ab_empty = ab_producer.acquire_and_advance()
            cute.copy(tma_atom_a, mA[(None, k)], sA[(None, ab_empty.index)], tma_bar_ptr=ab_empty.barrier)
            cute.copy(tma_atom_b, mB[(None, k)], sB[(None, ab_empty.index)], tma_bar_ptr=ab_empty.barrier)
        ab_producer.tail()
    if warp_idx == 1:
        acc_producer.acquire_and_advance()
        for k in cutlass.range(num_k_tiles):
            ab_full = ab_consumer.wait_and_advance()
            cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, ab_full.index)],
                      tCrB[(None, None, 0, ab_full.index)], tCtAcc)
            ab_full.release()
        acc_producer.commit()
    acc_full = acc_consumer.wait_and_advance()
    cute.copy(t2r, tTR_tAcc, tTR_rAcc)
    cute.arch.fence_view_async_tmem_load()
    acc_full.release()
    mC[tidx] = tTR_rAcc[0]
    if warp_idx == 1:
        acc_producer.tail()

    tmem.relinquish_alloc_permit()
    pipeline.sync(barrier_id=1)
    tmem.free(tmem.retrieve_ptr(cutlass.Float32))


@cute.jit
def host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, num_k_tiles: cutlass.Int32):
    op = tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 128, 16), tcgen05.CtaGroup.ONE,
                              tcgen05.OperandSource.SMEM, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K)
    tiled_mma = cute.make_tiled_mma(op)
    tma_op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    a_layout = cute.make_layout((128, 64, ab_stages))
    b_layout = cute.make_layout((128, 64, ab_stages))
    tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(tma_op, a, a_layout, (128, 128, 64), tiled_mma)
    tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(tma_op, b, b_layout, (128, 128, 64), tiled_mma)
    kernel(tiled_mma, tma_atom_a, tma_a, tma_atom_b, tma_b, c, a_layout, b_layout,
           num_k_tiles).launch(grid=(1, 1, 1), block=(threads_per_cta, 1, 1))
