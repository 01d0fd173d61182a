"""`@cute.struct` classes laid over shared memory allocated by size (`Struct(storage).field`), as
the Ampere tensor-core GEMMs do to reuse the mainloop's buffers for the epilogue."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of

KERNEL = '''
import cutlass
import cutlass.cute as cute


@cute.struct
class Mainloop:
    a: cute.struct.MemRange[cutlass.Float32, 256]


class K:
    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()

        @cute.struct
        class Epilogue:
            c: cute.struct.MemRange[cutlass.Float32, 256]

        storage = smem.allocate(1024, byte_alignment=16)
        sA = Mainloop(storage).a.get_tensor(cute.make_layout(256))
        sC = Epilogue(storage).c.get_tensor(cute.make_layout(256))
        if warp == 0:
            sA[tidx] = mA[tidx]
        SYNC
        if warp == 1:
            mA[tidx] = sC[tidx]
'''


def _kernel(sync: str):
    src = KERNEL.replace("SYNC", sync)
    return src, build_models(src, "k.py", Settings())[0]


def test_fields_of_struct_views_over_one_allocation_are_one_region():
    _, k = _kernel("pass")
    accesses = [op for p in k.processes for op in ir.walk(p.variants[0]) if isinstance(op, ir.Access)
                and op.region.space == "smem"]
    assert {op.write for op in accesses} == {True, False}
    # The module-level struct and the local one name the same memory: one region, named after
    # the allocation rather than either field.
    assert {op.region.name for op in accesses} == {"storage (CTA 0)"}
    assert not k.unmodeled


def test_write_through_one_view_races_with_a_read_through_the_other(require_spin):
    src, _ = _kernel("pass")
    fr = api.check_source(src, "k.py", Settings(), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "counterexample"
    [f] = kr.findings
    # Either access may come second in the interleaving SPIN finds; the other one is related.
    assert f.code == "CS201"
    assert {f.span.line} | {r.span.line for r in f.related} >= {line_of(src, "sA[tidx] = mA[tidx]"),
                                                                 line_of(src, "mA[tidx] = sC[tidx]")}


def test_synchronized_views_verify(require_spin):
    src, _ = _kernel("cute.arch.sync_threads()")
    fr = api.check_source(src, "k.py", Settings(), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "verified", kr.reason


NESTED = '''
import cutlass
import cutlass.cute as cute


def make_scheduler_storage(stages):
    @cute.struct
    class SchedulerStorage:
        tile_info_mbar: cute.struct.MemRange[cutlass.Int64, stages * 2]

    return SchedulerStorage


class K:
    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        Sched = make_scheduler_storage(2)

        @cute.struct
        class SharedStorage:
            scheduler: Sched
            flag: cutlass.Int64

        storage = cutlass.utils.SmemAllocator().allocate(SharedStorage)
        bars = storage.scheduler.tile_info_mbar.data_ptr()
        n = storage.scheduler.tile_info_mbar.shape
        if warp == 0:
            cute.arch.mbarrier_init(bars, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 0:
            cute.arch.mbarrier_arrive(bars)
        cute.arch.mbarrier_wait(bars, 0)
'''


def test_fields_of_a_nested_struct_are_regions_of_their_own():
    k = build_models(NESTED, "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled
    waits = [op for p in k.processes for op in ir.walk(p.variants[0]) if isinstance(op, ir.MbWait)]
    assert {op.bar.name for op in waits} == {"scheduler.tile_info_mbar (CTA 0)"}


def test_a_nested_struct_barrier_handoff_verifies(require_spin):
    fr = api.check_source(NESTED, "k.py", Settings(), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "verified", kr.reason
