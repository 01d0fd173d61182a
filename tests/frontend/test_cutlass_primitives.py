"""`cutlass.primitives` (the cuDNN frontend's `import cutlass.primitives as nvvm`).

Its calls are the NVVM operations cute.arch wraps, under other names: load_ext / store_ext are
plain loads and stores, barrier_cta_sync_aligned is bar.sync, mbarrier_* and the bulk copy
`cp_async_bulk_shared_cluster_global` are the mbarrier transaction protocol of a TMA load. Calls
of the module the model does not know are unmodeled, never skipped.
"""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

PRIM_IMPORT = "import cutlass.primitives as nvvm\n"
SS = "nvvm.SharedSpace.shared_cta"


def source(body: str) -> str:
    return kernel_source(body, threads=64).replace("import cutlass\n", "import cutlass\n" + PRIM_IMPORT, 1)


def check(src: str):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def bulk_copy_kernel(wait: bool, nbytes: str = "512", issuer: str = "tid == 0") -> str:
    spin = "while not nvvm.mbarrier_try_wait_parity(mbar.iterator, 0):\n    pass\n" if wait else ""
    return source(f"""\
nbytes = {nbytes}
smem = cutlass.utils.SmemAllocator()
mbar = smem.allocate_tensor(cutlass.Int64, cute.make_layout(1), byte_alignment=8)
sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout(128), byte_alignment=16)
tid, _, _ = cute.arch.thread_idx()
if tid == 0:
    nvvm.mbarrier_init(mbar.iterator, 1)
cute.arch.sync_threads()
if tid == 0:
    nvvm.mbarrier_arrive_expect_tx(mbar.iterator, nbytes)
if {issuer}:
    nvvm.cp_async_bulk_shared_cluster_global(sX.iterator, mA.iterator, mbar.iterator, nbytes)
{spin}v = nvvm.load_ext(sX.iterator + tid, dtype=cutlass.Float32, count=1, shared_space={SS})
""")


def test_bulk_copy_consumed_after_the_parity_wait_is_verified(require_spin):
    src = bulk_copy_kernel(wait=True)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_bulk_copy_read_without_the_wait_races(require_spin):
    src = bulk_copy_kernel(wait=False)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line == line_of(src, "nvvm.load_ext"), race.message


# A row whose size the host sets: the bytes do not fold, on the expect and the copy alike.
ROW_BYTES = "cute.size(mA) * 4"


def test_a_bulk_copy_of_a_size_the_host_sets_counts_as_one_copy_against_its_expect(require_spin):
    src = bulk_copy_kernel(wait=True, nbytes=ROW_BYTES)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert any("transaction bytes on mbar" in a and "not foldable" in a for a in r.assumptions), r.assumptions


def test_a_bulk_copy_of_a_size_the_host_sets_read_without_the_wait_races(require_spin):
    src = bulk_copy_kernel(wait=False, nbytes=ROW_BYTES)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS201" and f.span.line == line_of(src, "nvvm.load_ext") for f in r.findings), \
        [f.message for f in r.findings]


def test_bulk_copies_of_unknown_size_by_several_lanes_are_unmodeled():
    # One unit per copy would stand for a whole warp's copies: how many bytes each lane
    # completes against the one expect is not known, so the copy is not modeled.
    src = bulk_copy_kernel(wait=True, nbytes=ROW_BYTES, issuer="tid < 32")
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in m.unmodeled] == [
        ("primitives.cp_async_bulk_shared_cluster_global", line_of(src, "nvvm.cp_async_bulk"))], m.unmodeled


def exchange_kernel(sync: str) -> str:
    return source(f"""\
smem = cutlass.utils.SmemAllocator()
red = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64), byte_alignment=16)
tid, _, _ = cute.arch.thread_idx()
nvvm.store_ext(cutlass.Float32(1.0), red.iterator + tid, shared_space={SS})
{sync}
other = nvvm.load_ext(red.iterator + (63 - tid), dtype=cutlass.Float32, count=1, shared_space={SS})
{sync}
nvvm.store_ext(other, mA.iterator + tid)
""")


def test_cross_warp_exchange_behind_barrier_cta_sync_aligned_is_verified(require_spin):
    r = check(exchange_kernel("nvvm.barrier_cta_sync_aligned(0)"))
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_cross_warp_exchange_without_a_barrier_races(require_spin):
    # The vector store's elements are not tracked (the whole buffer, P16): a possible race,
    # reported as CS201 in an inconclusive verdict.
    src = exchange_kernel("")
    r = check(src)
    assert r.verdict == "inconclusive", r.reason
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line in (line_of(src, "nvvm.store_ext"), line_of(src, "nvvm.load_ext")), race.message


def test_scalar_loads_of_distinct_lane_elements_do_not_race(require_spin):
    # load_ext(count=1) through `buf.iterator + tid` is `buf[tid]`: each lane its own element.
    src = source(f"""\
smem = cutlass.utils.SmemAllocator()
red = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64), byte_alignment=16)
tid, _, _ = cute.arch.thread_idx()
red[tid] = cutlass.Float32(1.0)
v = nvvm.load_ext(red.iterator + tid, dtype=cutlass.Float32, count=1, shared_space={SS})
red[tid] = v
""")
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    crossed = check(src.replace("red.iterator + tid,", "red.iterator + (63 - tid),"))
    assert crossed.verdict == "counterexample", crossed.reason
    assert crossed.findings[0].code == "CS201"


def test_plain_stores_after_a_fence_are_data_not_flag_releases():
    # store_ext is a weak st: after fence_acq_rel it is still a data write of the tensor.
    src = source("""\
tid, _, _ = cute.arch.thread_idx()
nvvm.fence_acq_rel(nvvm.MemScope.GPU)
nvvm.store_ext(cutlass.Float32(2.0) * tid, mA.iterator + tid)
""")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled


def test_unknown_primitives_are_unmodeled_and_pure_ones_are_not():
    src = source("""\
lane = cute.arch.lane_idx()
v = nvvm.shfl_sync(0xFFFFFFFF, cutlass.Float32(1.0), 1, 0x1F, nvvm.Shfl.BFLY)
nvvm.some_future_copy(mA.iterator)
nvvm.some_future_barrier(0)
""")
    m = build_models(src, "k.py", Settings())[0]
    names = sorted(u.construct for u in m.unmodeled)
    assert names == ["primitives.some_future_barrier", "primitives.some_future_copy"], m.unmodeled


def test_register_only_primitives_and_grid_dependency_control_are_modeled():
    # quack's warp reductions (`prims.redux_sync`) and its PDL wait / launch (`prims.griddepcontrol`).
    src = source("""\
nvvm.griddepcontrol(nvvm.GridDepAction.WAIT)
v = nvvm.redux_sync(cutlass.Int32(1), nvvm.ReductionKind.ADD, 0xFFFFFFFF)
w = nvvm.prmt(v, v, 0x3210)
x = nvvm.mul_bf16x2(w, w)
nvvm.griddepcontrol(nvvm.GridDepAction.LAUNCH_DEPENDENTS)
""")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert any("griddepcontrol" in a for a in m.assumptions), m.assumptions


UNANNOTATED = """\
import cutlass
import cutlass.cute as cute
import cutlass.primitives as nvvm


@cute.kernel
def _k(mP, mRet):
    tid, _, _ = cute.arch.thread_idx()
    cx, _, _ = cute.arch.block_idx()
    nvvm.store_ext(cutlass.Float32(1.0), mP.iterator + tid)
    nvvm.fence_acq_rel(nvvm.MemScope.GPU)
    nvvm.barrier_cta_sync_aligned(0)
    if tid == 0:
        nvvm.atomicrmw(nvvm.AtomicOp.ADD, mRet.iterator + cx, cutlass.Int32(1),
                       mem_order=nvvm.MemOrder.RELEASE, syncscope=nvvm.MemScope.GPU)


@cute.jit
def _host(mP, mRet):
    _k(mP, mRet).launch(grid=(1, 1, 1), block=(64, 1, 1))
"""


def test_iterator_of_an_unannotated_kernel_argument_is_its_global_tensor():
    # cuDNN passes tensors unannotated: `mRet.iterator` is still a global pointer, so the
    # release atomic on it is a flag update, not an unresolved pointer.
    m = build_models(UNANNOTATED, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert "mRet" in str(m.processes)


def test_the_experimental_import_path_is_the_same_layer_and_never_skipped():
    # cuDNN's SDPA kernels: `from cutlass.experimental import primitives as nvvm`. Before, its
    # calls without a buffer argument (`barrier_cta_sync`, fences) were skipped silently.
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
mbar = smem.allocate_tensor(cutlass.Int64, cute.make_layout(1), byte_alignment=8)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    if nvvm.elect_sync():
        nvvm.mbarrier_init(mbar.iterator, 1)
nvvm.fence_mbarrier_init()
nvvm.barrier_cta_sync(0)
if warp == 1:
    if nvvm.elect_sync():
        nvvm.mbarrier_arrive(mbar.iterator)
if warp == 0:
    while not nvvm.mbarrier_try_wait_parity(mbar.iterator, 0):
        pass
nvvm.bar_warp_sync(0xFFFFFFFF)
nvvm.some_future_fence()
""", threads=64).replace("import cutlass\n", "import cutlass\nfrom cutlass.experimental import primitives as nvvm\n", 1)
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in m.unmodeled] == [("primitives.some_future_fence", line_of(src, "some_future_fence"))]
    names = {type(op).__name__ for p in m.processes for op in p.variants[-1]}
    assert {"MbInit", "MbArrive", "MbWait", "NamedBarrier", "SyncWarp"} <= names
    arrive = next(op for p in m.processes for op in p.variants[-1] if type(op).__name__ == "MbArrive")
    assert arrive.count == 1  # one elected lane, not the warp


# cuDNN frost's pointer helpers probe the pointer with `hasattr` before falling back to plain
# pointer arithmetic; both paths name the same address.
POINTER_HELPERS = '''


def _advance(x, n):
    if hasattr(x, "subview"):
        return x.subview(n)
    return x + n


def _bulk_copy_ptr(x):
    if hasattr(x, "llvm_ptr"):
        return x.llvm_ptr
    return x
'''


def probed_copy_kernel(wait: bool) -> str:
    src = bulk_copy_kernel(wait).replace(
        "nvvm.cp_async_bulk_shared_cluster_global(sX.iterator, mA.iterator, mbar.iterator, 512)",
        "nvvm.cp_async_bulk_shared_cluster_global(_bulk_copy_ptr(_advance(sX.iterator, 0)), mA.iterator, "
        "_bulk_copy_ptr(mbar.iterator), 512)")
    return src + POINTER_HELPERS


def test_hasattr_probes_on_pointers_take_the_plain_path(require_spin):
    src = probed_copy_kernel(wait=True)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert check(src).verdict == "verified"
    r = check(probed_copy_kernel(wait=False))
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


def test_a_struct_fields_ptr_probe_takes_the_field_itself(require_spin):
    # cuDNN's flex-attention `struct_scalar_ptr(field)`: `field.ptr if hasattr(field, "ptr") else
    # field` (CUTLASS DSL 4.6 wraps scalar fields): both name the field's address.
    helper = '\n\ndef _scalar_ptr(field):\n    return field.ptr if hasattr(field, "ptr") else field\n'
    src = bulk_copy_kernel(True).replace("mbar.iterator, nbytes)", "_scalar_ptr(mbar.iterator), nbytes)") + helper
    assert "_scalar_ptr(mbar" in src
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert check(src).verdict == "verified"


def test_hasattr_on_a_value_the_model_does_not_know_is_not_guessed():
    src = source("""\
smem = cutlass.utils.SmemAllocator()
mbar = smem.allocate_tensor(cutlass.Int64, cute.make_layout(1), byte_alignment=8)
if hasattr(mbar.iterator, "mystery"):
    nvvm.mbarrier_init(mbar.iterator, 1)
""")
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in m.unmodeled][:1] == [("hasattr", line_of(src, "hasattr("))]


def cp_async_kernel(wait: str) -> str:
    """Every thread copies 16 bytes with the primitives' cp.async (cuDNN frost's `load_tile`),
    then the CTA reads the tile."""
    return source(f"""\
smem = cutlass.utils.SmemAllocator()
sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout(256), byte_alignment=16)
tid, _, _ = cute.arch.thread_idx()
nvvm.cp_async_shared_global(sX.iterator + tid * 4, mA.iterator + tid * 4, 16, nvvm.LoadCacheModifier.CG)
nvvm.cp_async_commit_group()
{wait}cute.arch.sync_threads()
v = nvvm.load_ext(sX.iterator + (255 - tid), dtype=cutlass.Float32, count=1, shared_space={SS})
""")


def test_primitives_cp_async_retired_by_its_wait_group_is_verified(require_spin):
    src = cp_async_kernel("nvvm.cp_async_wait_group(0)\n")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_primitives_cp_async_read_before_its_wait_group_is_not_verified(require_spin):
    """The copy's elements are not tracked, so the unretired write is a possible race (P16)."""
    r = check(cp_async_kernel(""))
    assert not r.unmodeled
    assert r.verdict == "inconclusive" and "possible data race" in r.reason


def cp_async_arrive_kernel(arrive: str, count: int = 64) -> str:
    """Every thread copies 16 bytes with cp.async and arrives on the mbarrier once its copies
    complete (cuDNN's linear-attention beta loads), then reads another thread's part."""
    return source(f"""\
smem = cutlass.utils.SmemAllocator()
mbar = smem.allocate_tensor(cutlass.Int64, cute.make_layout(1), byte_alignment=8)
sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout(256), byte_alignment=16)
tid, _, _ = cute.arch.thread_idx()
if tid == 0:
    nvvm.mbarrier_init(mbar.iterator, {count})
cute.arch.sync_threads()
nvvm.cp_async_shared_global(sX.iterator + tid * 4, mA.iterator + tid * 4, 16, nvvm.LoadCacheModifier.CG)
{arrive}
while not nvvm.mbarrier_try_wait_parity(mbar.iterator, 0):
    pass
v = nvvm.load_ext(sX.iterator + (255 - tid), dtype=cutlass.Float32, count=1, shared_space={SS})
""")


def test_a_cp_async_arrive_with_noinc_publishes_the_copies_to_the_waiters(require_spin):
    src = cp_async_arrive_kernel("nvvm.cp_async_mbarrier_arrive(mbar.iterator, noinc=True)")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    # A plain arrive does not wait for the copies: the read may see them incomplete.
    plain = check(cp_async_arrive_kernel("nvvm.mbarrier_arrive(mbar.iterator)"))
    assert plain.verdict != "verified" and [f.code for f in plain.findings] == ["CS201"], plain.reason
    # It is one arrival per thread: a count of 128 is never reached.
    short = check(cp_async_arrive_kernel("nvvm.cp_async_mbarrier_arrive(mbar.iterator, noinc=True)", 128))
    assert short.verdict == "counterexample" and [f.code for f in short.findings] == ["CS101"], short.reason


def test_a_cp_async_arrive_without_noinc_is_unmodeled():
    src = cp_async_arrive_kernel("nvvm.cp_async_mbarrier_arrive(mbar.iterator)")
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in m.unmodeled] == [
        ("primitives.cp_async_mbarrier_arrive", line_of(src, "cp_async_mbarrier_arrive"))]
