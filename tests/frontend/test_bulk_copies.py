"""Non-tensor bulk loads (`CopyBulkG2SOp` through `cute.copy(..., mbar_ptr=bar)`), the way quack's
and cuDNN's `cpasync_bulk_get_copy_fn` load LSE rows: a load that completes its bytes on the
barrier, like a TMA load. Also the pointer and address-space queries their helpers branch on."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

SETUP = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout(128), byte_alignment=128)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
"""

LOAD = """\
if warp_idx == 0:
    atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, 512)
        cute.copy(atom, mA, sA, mbar_ptr=bar)
"""


def _model(body: str):
    k = build_models(kernel_source(body), "k.py", Settings())[0]
    return k, [op for p in k.processes for v in p.variants for op in ir.walk(v)]


def _check(src: str):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_a_bulk_load_completes_its_bytes_on_the_barrier_like_a_tma_load():
    k, ops = _model(SETUP + LOAD)
    loads = [op for op in ops if isinstance(op, ir.TmaLoad)]
    assert [(op.bar.name, [r.name for r in op.regions()]) for op in loads] == [("bar (CTA 0)", ["sA (CTA 0)"])]
    assert not k.unmodeled


def test_a_bulk_load_through_an_atom_passed_in_is_told_by_its_operands():
    # The helper's atom is a parameter the model does not see: a global source and a shared
    # destination make it the bulk load all the same.
    k, ops = _model(SETUP + LOAD.replace("cute.copy(atom, mA, sA, mbar_ptr=bar)",
                                         "cute.copy(self.atom, mA, sA, mbar_ptr=bar)"))
    assert [op.bar.name for op in ops if isinstance(op, ir.TmaLoad)] == ["bar (CTA 0)"]
    assert not k.unmodeled


def test_a_shared_to_shared_copy_with_a_barrier_stays_unmodeled():
    k, ops = _model(SETUP + """\
sB = smem.allocate_tensor(cutlass.Float32, cute.make_layout(128), byte_alignment=128)
cute.copy(self.atom, sA, sB, mbar_ptr=bar)
""")
    assert not [op for op in ops if isinstance(op, ir.TmaLoad)]
    assert [(u.construct, u.why) for u in k.unmodeled] == [
        ("cute.copy(mbar_ptr=...)", "asynchronous DSMEM copies are not modeled")]


def test_a_bulk_load_handoff_is_verified_and_reading_before_the_wait_races(require_spin):
    consume = """\
else:
    cute.arch.mbarrier_wait(bar, 0)
    x = sA[cute.arch.lane_idx()]
"""
    assert _check(kernel_source(SETUP + LOAD + consume)).verdict == "verified"
    # The consumer reads before it waits (and waits after, so that nothing deadlocks).
    early = kernel_source(SETUP + LOAD + consume.replace("    cute.arch.mbarrier_wait(bar, 0)\n", "")
                          + "    cute.arch.mbarrier_wait(bar, 0)\n")
    kr = _check(early)
    assert kr.verdict == "counterexample"
    assert {(f.code, f.span.line) for f in kr.findings} == {("CS201", line_of(early, "x = sA"))}


def test_a_recast_pointer_is_a_view_of_the_buffer_it_points_into():
    _, ops = _model(SETUP + """\
sAcc = cute.make_tensor(cute.recast_ptr(sA.iterator, dtype=cutlass.Int32), cute.make_layout(128))
sAcc[0] = 1
""")
    assert {op.region.name for op in ops if isinstance(op, ir.Access) and op.write} == {"sA (CTA 0)"}


def test_address_space_and_pointer_queries_fold_for_buffers_and_global_tensors():
    # cuDNN's `tma_get_copy_fn` finds the shared-memory side of a copy with
    # `isinstance(t.iterator, cute.Pointer) and t.memspace == cute.AddressSpace.smem`.
    body = SETUP + """\
if cutlass.const_expr(isinstance(sA.iterator, cute.Pointer) and sA.memspace == cute.AddressSpace.smem):
    sA[1] = 1.0
if cutlass.const_expr(isinstance(mA.iterator, cute.Pointer) and mA.memspace == cutlass.AddressSpace.smem):
    sA[2] = 1.0
if cutlass.const_expr(isinstance(mA, cute.Tensor) and not isinstance(3, cute.Tensor)):
    sA[3] = 1.0
"""
    src = kernel_source(body)
    _, ops = _model(body)
    assert not [op for op in ops if isinstance(op, ir.Choice)]
    assert sorted({op.span.line for op in ops if isinstance(op, ir.Access) and op.write}) == [
        line_of(src, "sA[1] = 1.0"), line_of(src, "sA[3] = 1.0")]
