"""TMEM contents on Blackwell (policy P13): tcgen05.ld as asynchronous reads, tcgen05 MMA
accumulator writes per accumulator stage, and dealloc after every use."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..conftest import SAMPLES

HEAD = '''
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05


class K:
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tCrA: cute.Tensor, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        holder = smem.allocate_array(cutlass.Int32, 1)
        if cute.arch.warp_idx() == 0:
            cute.arch.alloc_tmem(256, holder)
        cute.arch.sync_threads()
        ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, alignment=16, ptr_to_buffer_holding_addr=holder)
        acc = cute.make_tensor(ptr, tiled_mma.make_fragment_C(cute.append((128, 128), 2)).layout)
        t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32),
                                                         cutlass.Float32), acc)
        tTR = t2r.get_slice(tidx).partition_S(acc)
        regs = cute.make_rmem_tensor((32,), cutlass.Float32)
        s0 = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
'''


def _ops(body: str, warp: int = 0):
    src = HEAD + "".join("        " + line + "\n" for line in body.strip().splitlines())
    k = build_models(src, "k.py", Settings())[0]
    p = next(p for p in k.processes if p.warp == warp)
    return k, list(ir.walk(p.variants[-1]))


def _tmem(ops, cls):
    return [op for op in ops if isinstance(op, cls) and op.region.space == "tmem"]


def test_tmem_load_is_an_asynchronous_read_retired_by_the_load_fence():
    k, ops = _ops("""
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.arch.fence_view_async_tmem_load()
""")
    reads = _tmem(ops, ir.AsyncRead)
    wait = next(op for op in ops if isinstance(op, ir.AsyncReadWait))
    assert [(r.kind, r.region.name) for r in reads] == [("tmem_ld", "TMEM[stage 0] (CTA 0)")]
    assert wait.kind == "tmem_ld" and wait.done_reads == reads
    assert not k.unmodeled
    assert not any("TMEM contents are not tracked" in a for a in k.assumptions)


def test_a_load_without_fence_or_register_read_stays_in_flight():
    _, ops = _ops("""
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs[(None, 0)])
""")
    assert len(_tmem(ops, ir.AsyncRead)) == 2
    assert not [op for op in ops if isinstance(op, ir.AsyncReadWait)]


def test_reading_the_filled_registers_waits_for_the_loads():
    for use in ("x = regs.load()", "x = regs[3]", "cute.autovec_copy(regs, mC)"):
        k, ops = _ops(f"""
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
{use}
""")
        reads = _tmem(ops, ir.AsyncRead)
        waits = [op for op in ops if isinstance(op, ir.AsyncReadWait)]
        assert len(waits) == 1 and waits[0].done_reads == reads, use
        assert any("reading the registers a tcgen05.ld filled" in a for a in k.assumptions)


def test_registers_no_tmem_load_filled_are_plain_values():
    k, ops = _ops("""
other = cute.make_rmem_tensor((32,), cutlass.Float32)
x = other.load()
""")
    assert not [op for op in ops if isinstance(op, ir.AsyncReadWait)]
    assert not any("tcgen05.ld filled" in a for a in k.assumptions)


def test_stage_is_selected_by_a_pipeline_state_index_only():
    _, ops = _ops("""
s0.advance()
cute.copy(t2r, tTR[(None, None, None, s0.index)][(None, 3)], regs)
cute.arch.fence_view_async_tmem_load()
""")
    # `.index` of the advanced state selects stage 1; the sub-tile index 3 stays inside it.
    assert [r.region.name for r in _tmem(ops, ir.AsyncRead)] == ["TMEM[stage 1] (CTA 0)"]


def test_an_access_without_stage_makes_the_ctas_tmem_one_buffer():
    _, ops = _ops("""
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.arch.fence_view_async_tmem_load()
cute.copy(t2r, tTR[(None, None, None, 1)], regs)
cute.arch.fence_view_async_tmem_load()
""")
    assert {r.region.name for r in _tmem(ops, ir.AsyncRead)} == {"TMEM (CTA 0)"}


def test_mma_writes_the_accumulator_stage_from_the_issuing_thread():
    k, ops = _ops("""
cute.gemm(tiled_mma, acc[(None, None, None, s0.index)], tCrA, tCrA, acc[(None, None, None, s0.index)])
""")
    writes = _tmem(ops, ir.Access)
    assert [(w.write, w.region.name) for w in writes] == [(True, "TMEM[stage 0] (CTA 0)")]
    p = k.processes[0]
    assert [p.lane_classes[i].lanes for i in range(len(p.lane_classes)) if writes[0].lanes >> i & 1] == [(0,)]
    assert any("tcgen05 MMA's accumulator write" in a for a in k.assumptions)


def test_dealloc_reads_and_writes_every_stage_in_use():
    k, ops = _ops("""
s1 = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
s1.advance()
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.copy(t2r, tTR[(None, None, None, s1.index)], regs)
cute.arch.fence_view_async_tmem_load()
cute.arch.dealloc_tmem(ptr, 256)
""")
    dealloc = [op for op in _tmem(ops, ir.Access) if op.what == "dealloc"]
    assert sorted((d.write, d.region.name) for d in dealloc) == [
        (False, "TMEM[stage 0] (CTA 0)"), (False, "TMEM[stage 1] (CTA 0)"),
        (True, "TMEM[stage 0] (CTA 0)"), (True, "TMEM[stage 1] (CTA 0)")]


def test_tmem_allocator_free_deallocates_on_the_allocator_warp_only():
    src = HEAD.replace("        if cute.arch.warp_idx() == 0:\n            cute.arch.alloc_tmem(256, holder)\n"
                       "        cute.arch.sync_threads()\n", "") + '''
        tm = utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=64),
                                 allocator_warp_id=1)
        tm.reserve(256)
        cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
        cute.arch.fence_view_async_tmem_load()
        tm.relinquish_alloc_permit()
        tm.free(ptr)
'''
    src = src.replace("class K:\n", "class K:\n    # cutespin: block=64\n")
    k = build_models(src, "k.py", Settings())[0]
    frees = {p.warp: [op for op in ir.walk(p.variants[-1]) if isinstance(op, ir.Access) and op.what == "dealloc"]
             for p in k.processes}
    assert not frees[0] and frees[1]


def test_tmem_store_is_a_write_with_its_completion_stated():
    k, ops = _ops("""
cute.copy(t2r, regs, tTR[(None, None, None, s0.index)])
cute.arch.fence_view_async_tmem_store()
""")
    assert [(w.write, w.region.name) for w in _tmem(ops, ir.Access)] == [(True, "TMEM[stage 0] (CTA 0)")]
    assert any("tcgen05.st / tcgen05.cp into TMEM are taken as complete at issue" in a for a in k.assumptions)


# ---- end to end, on the sample kernel: which orders of load, wait and release are races

OK = (SAMPLES / "tmem_load_fence_ok.py").read_text()
EPILOGUE = """                cute.copy(t2r, tTR_tAcc_base[(None, None, None, consumer.index)], tTR_rAcc)
                cute.arch.fence_view_async_tmem_load()
                with cute.arch.elect_one():
                    acc_pipeline.consumer_release(consumer)
                consumer.advance()
                mC[tile * 128 + tidx] = tTR_rAcc[0]
"""


def _verdict(epilogue: str):
    assert EPILOGUE in OK
    src = OK.replace(EPILOGUE, epilogue)
    r = api.check_source(src, "tmem_variant.py", Settings().with_overrides(verify_fixes=False), with_fixes=False)
    k = r.kernels[0]
    return k.verdict, [(f.code, src.splitlines()[f.span.line - 1].strip()) for f in k.findings]


def test_register_use_before_the_release_is_enough(require_spin):
    verdict, found = _verdict("""                cute.copy(t2r, tTR_tAcc_base[(None, None, None, consumer.index)], tTR_rAcc)
                mC[tile * 128 + tidx] = tTR_rAcc.load()[0]
                with cute.arch.elect_one():
                    acc_pipeline.consumer_release(consumer)
                consumer.advance()
""")
    assert verdict == "verified", found


def test_register_use_after_the_release_is_a_race_at_the_next_mma(require_spin):
    verdict, found = _verdict("""                cute.copy(t2r, tTR_tAcc_base[(None, None, None, consumer.index)], tTR_rAcc)
                with cute.arch.elect_one():
                    acc_pipeline.consumer_release(consumer)
                consumer.advance()
                mC[tile * 128 + tidx] = tTR_rAcc.load()[0]
""")
    assert verdict == "counterexample"
    assert found and all(code == "CS201" and line.startswith("cute.gemm(") for code, line in found), found


def test_reading_a_stage_before_its_mma_is_committed_is_a_race(require_spin):
    verdict, found = _verdict(EPILOGUE.replace("                acc_pipeline.consumer_wait(consumer)\n", "")
                              .replace("cute.copy(t2r, tTR_tAcc_base[(None, None, None, consumer.index)], tTR_rAcc)",
                                       "cute.copy(t2r, tTR_tAcc_base[(None, None, None, (consumer.index + 1) % 2)], "
                                       "tTR_rAcc)"))
    # Reading the other stage than the one waited for: the MMA may still write it.
    assert verdict == "counterexample" and {c for c, _ in found} == {"CS201"}, found


def test_constant_column_offsets_are_separate_buffers_and_an_unknown_one_covers_all():
    _, ops = _ops("""
s_t = cute.make_tensor(ptr + 128, acc.layout)
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.copy(t2r, s_t, regs)
cute.arch.fence_view_async_tmem_load()
""")
    assert [r.region.name for r in _tmem(ops, ir.AsyncRead)] == ["TMEM[stage 0] (CTA 0)", "TMEM+128 (CTA 0)"]
    assert all(r.exact for r in _tmem(ops, ir.AsyncRead))
    _, ops = _ops("""
far = cute.make_tensor(ptr + mC[0], acc.layout)
cute.copy(t2r, tTR[(None, None, None, s0.index)], regs)
cute.copy(t2r, far, regs)
cute.arch.fence_view_async_tmem_load()
""")
    assert {r.region.name for r in _tmem(ops, ir.AsyncRead)} == {"TMEM+? (CTA 0)"}
    # Both reads now stand for more columns than they touch: a race through them is possible
    # only (P16), as dsa_bwd's S and dP accumulators at known, different columns showed.
    assert not any(r.exact for r in _tmem(ops, ir.AsyncRead))


def test_starred_elements_splice_into_tuple_displays():
    # The examples size the TMEM allocation barrier as 32 * len((mma_warp, *epilogue_warps)).
    src = HEAD + '''
        nb = pipeline.NamedBarrier(barrier_id=2, num_threads=32 * len((4, *(0, 1, 2, 3))))
        nb.arrive_and_wait()
'''
    k = build_models(src, "k.py", Settings())[0]
    bars = [op for op in ir.walk(k.processes[0].variants[-1]) if isinstance(op, ir.NamedBarrier) and op.barrier_id == 2]
    assert [b.threads for b in bars] == [160]


def test_two_cta_tmem_allocator_meets_the_peer_before_freeing():
    # is_two_cta: the constructor initialises the dealloc mbarrier (32 arrivals) on the allocator
    # warp; free() arrives with all 32 lanes on the peer CTA's dealloc barrier, waits on its own,
    # then deallocates this CTA's TMEM.
    from ..kernels import kernel_source
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
holder = smem.allocate_array(cutlass.Int32, 1)
dbar = smem.allocate_array(cutlass.Int64, 1)
tm = cutlass.utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=64),
                         is_two_cta=True, two_cta_tmem_dealloc_mbar_ptr=dbar)
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
tm.allocate(256)
tm.wait_for_alloc()
ptr = tm.retrieve_ptr(cutlass.Float32)
tm.free(ptr)
""", cluster="(2, 1, 1)", grid="(2, 1, 1)")
    k = build_models(src, "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled
    assert any("2-CTA TMEM allocation" in a for a in k.assumptions)
    for cta in (0, 1):
        w0 = [op for op in ir.walk(next(p for p in k.processes if p.cta == cta and p.warp == 0).variants[-1])]
        inits = [op for op in w0 if isinstance(op, ir.MbInit)]
        assert len(inits) == 1 and inits[0].count == 32 and inits[0].bar.cta == cta
        tail = [op for op in w0 if isinstance(op, (ir.MbArrive, ir.MbWait)) or
                isinstance(op, ir.Access) and op.what == "dealloc"]
        arrive, wait = tail
        assert isinstance(arrive, ir.MbArrive) and arrive.bar.cta == 1 - cta and arrive.count == 32 and arrive.remote
        assert isinstance(wait, ir.MbWait) and wait.bar.cta == cta and wait.parity == 0
        w1 = [op for op in ir.walk(next(p for p in k.processes if p.cta == cta and p.warp == 1).variants[-1])]
        assert not [op for op in w1 if isinstance(op, (ir.MbArrive, ir.MbWait, ir.MbInit))]


def test_two_cta_tmem_allocator_without_a_cluster_is_reported():
    from ..kernels import kernel_source
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
holder = smem.allocate_array(cutlass.Int32, 1)
tm = cutlass.utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=64),
                         is_two_cta=True)
tm.allocate(256)
""")
    k = build_models(src, "k.py", Settings())[0]
    assert [u for u in k.unmodeled if u.construct == "TmemAllocator.allocate"]


def _allocator_with_unknown_pair_flag(cluster=None):
    from ..kernels import kernel_source
    return kernel_source("""\
smem = cutlass.utils.SmemAllocator()
holder = smem.allocate_array(cutlass.Int32, 1)
tm = cutlass.utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=64),
                         is_two_cta=self.use_2cta_instrs)
tm.allocate(256)
tm.wait_for_alloc()
ptr = tm.retrieve_ptr(cutlass.Float32)
""", init="self.use_2cta_instrs = mma_tiler_from_host()[0] == 256", cluster=cluster, grid="(2, 1, 1)")


def test_an_unknown_pair_flag_is_a_one_cta_allocation_in_a_one_cta_cluster():
    k = build_models(_allocator_with_unknown_pair_flag(), "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled
    assert any("is_two_cta not known: a 1-CTA allocation" in a for a in k.assumptions)
    # The allocator warp writes the address word, then reads it back after the barrier.
    w0 = [(op.region.name, op.write) for op in ir.walk(k.processes[0].variants[-1]) if isinstance(op, ir.Access)]
    assert w0 == [("holder (CTA 0)", True), ("holder (CTA 0)", False)]


def test_an_unknown_pair_flag_in_a_larger_cluster_stays_unmodeled():
    k = build_models(_allocator_with_unknown_pair_flag(cluster="(2, 1, 1)"), "k.py", Settings())[0]
    assert {(u.construct, u.why) for u in k.unmodeled} >= {("TmemAllocator.allocate", "is_two_cta is not known")}


def test_a_variable_assigned_only_a_state_index_selects_the_accumulator_stage():
    # CUTLASS block-scaled GEMMs: `acc_stage_index = acc_consumer_state.index` (or `phase ^ 1`
    # with an overlapping accumulator), then `tTR_tAcc_base[(None, ..., acc_stage_index)]`.
    _, ops = _ops("""
s0.advance()
acc_stage_index = s0.index
cute.copy(t2r, tTR[(None, None, None, acc_stage_index)], regs)
""")
    assert [r.region.name for r in _tmem(ops, ir.AsyncRead)] == ["TMEM[stage 1] (CTA 0)"]
    _, ops = _ops("""
acc_index = s0.phase ^ 1
cute.copy(t2r, tTR[(None, None, None, acc_index)], regs)
""")
    assert [r.region.name for r in _tmem(ops, ir.AsyncRead)] == ["TMEM[stage 1] (CTA 0)"]
    # A variable assigned anything else (a sub-tile or k-block index) stays inside the buffer,
    # whatever its name.
    _, ops = _ops("""
s0.advance()
sub_stage = 1
cute.copy(t2r, tTR[(None, None, None, sub_stage)], regs)
""")
    assert [r.region.name for r in _tmem(ops, ir.AsyncRead)] == ["TMEM (CTA 0)"]
