# cutespin-expect: kernel=kernel verdict=verified
"""umma_mma_after_wait_ok.py with the MMA issued from inline PTX: `elect.sync` and `tcgen05.mma`
on shared-memory matrix descriptors, the way flash-attn's, quack's and cuDNN's `gemm_ptx` helpers
issue it.

The descriptors' start fields are computed from the stage's address (`toint() & 0x3FFFF >> 4`),
so the MMA reads the stage the MMA warp waited for; `ab_full.release()` (tcgen05.commit) arrives
on the empty barrier once the MMA is done.

Expected: correct. ``umma_inline_ptx_before_wait.py`` issues the MMA before the wait.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync, tcgen05

threads_per_cta = 128
ab_stages = 2


@cute.struct
class SharedStorage:
    ab_mbar: cute.struct.MemRange[cutlass.Int64, ab_stages * 2]
    acc_mbar: cute.struct.MemRange[cutlass.Int64, 2]
    tmem_holding_buf: cutlass.Int32


@cute.jit
def mma_ptx(tiled_mma: cute.TiledMma, acc_tmem_addr: cutlass.Int32, sA: cute.Tensor, sB: cute.Tensor):
    """One K tile of tcgen05.mma issued from inline PTX on SMEM matrix descriptors, as the
    `gemm_ptx` helpers of flash-attn and cuDNN do: the descriptors' start fields are the
    operands' addresses (bits 4-17), one elected lane issues the MMAs, and the second MMA steps
    the A descriptor to the next K block of the same stage."""
    is_ts = tiled_mma.op.a_src == tcgen05.OperandSource.TMEM
    assert not is_ts, "A from TMEM takes another instruction form"
    desc_hi = 0x40004000
    a_lo = cutlass.Int32(0x00100010 | ((sA.iterator.toint() & 0x3FFFF) >> 4))
    b_lo = cutlass.Int32(0x00100010 | ((sB.iterator.toint() & 0x3FFFF) >> 4))
    llvm.inline_asm(
        None,
        [cutlass.Int32(cute.arch.make_warp_uniform(a_lo)).ir_value(),
         cutlass.Int32(cute.arch.make_warp_uniform(b_lo)).ir_value(),
         cutlass.Int32(acc_tmem_addr).ir_value()],
        "{\n\t"
        ".reg .pred leader;\n\t"
        ".reg .b32 acc, a_lo, b_lo;\n\t"
        ".reg .b64 da, db;\n\t"
        "elect.sync _|leader, -1;\n\t"
        "mov.b32 acc, $2;\n\t"
        "mov.b32 a_lo, $0;\n\t"
        "mov.b32 b_lo, $1;\n\t"
        f"mov.b64 da, {{a_lo, {hex(desc_hi)}}};\n\t"
        f"mov.b64 db, {{b_lo, {hex(desc_hi)}}};\n\t"
        "@leader tcgen05.mma.cta_group::1.kind::f16 [acc], da, db, 0x08200490, 1;\n\t"
        "add.u32 a_lo, a_lo, 0x2;\n\t"
        "add.u32 b_lo, b_lo, 0x2;\n\t"
        f"mov.b64 da, {{a_lo, {hex(desc_hi)}}};\n\t"
        f"mov.b64 db, {{b_lo, {hex(desc_hi)}}};\n\t"
        "@leader tcgen05.mma.cta_group::1.kind::f16 [acc], da, db, 0x08200490, 1;\n\t"
        "}\n",
        "r,r,r",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
    )


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
    ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
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
            mma_ptx(tiled_mma, tCtAcc.iterator.toint(), sA[(None, None, ab_full.index)],
                    sB[(None, None, ab_full.index)])
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
