"""TMA descriptors written in the kernel (grouped GEMMs): `utils.TensorMapManager` and the
`cpasync` descriptor functions, modeled as the accesses of the buffers holding the descriptors."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of

KERNEL = '''
import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass.cute.nvgpu import cpasync


class K:
    @cute.kernel
    def kernel(self, tma_atom_a: cute.CopyAtom, tma_atom_b: cute.CopyAtom, mDesc: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        sDesc = smem.allocate_array(cutlass.Int64, 32)
        desc_a = sDesc
        desc_b = sDesc + 16
        manager = utils.TensorMapManager(utils.TensorMapUpdateMode.MODE, 128)
        gdesc_a = manager.get_tensormap_ptr(mDesc[(0, None)].iterator)
        gdesc_b = manager.get_tensormap_ptr(mDesc[(1, None)].iterator)
        manager.init_tensormap_from_atom(tma_atom_a, desc_a, 0)
        manager.init_tensormap_from_atom(tma_atom_b, desc_b, 0)
        manager.fence_tensormap_initialization()
        SYNC
        if warp == 1:
            cpasync.cp_fence_tma_desc_release(gdesc_a, desc_a)
        cute.arch.sync_threads()
        manager.update_tensormap((mDesc, mDesc), (tma_atom_a, tma_atom_b), (gdesc_a, gdesc_b), 0, (desc_a, desc_b))
        manager.fence_tensormap_update(gdesc_a)
'''


def _source(sync: str = "cute.arch.sync_threads()", mode: str = "SMEM") -> str:
    return KERNEL.replace("SYNC", sync).replace("MODE", mode)


def _warp_ops(src: str, warp: int):
    k = build_models(src, "k.py", Settings())[0]
    p = next(p for p in k.processes if p.warp == warp)
    return k, list(ir.walk(p.variants[-1]))


def _smem_accesses(ops):
    return [op for op in ops if isinstance(op, ir.Access) and op.region.space == "smem"]


def test_manager_warp_writes_descriptors_with_one_lane_then_the_warp_edits_and_copies_them():
    src = _source()
    k, ops = _warp_ops(src, 0)
    assert not k.unmodeled
    assert any("tensormap proxy" in a for a in k.assumptions)
    accesses = _smem_accesses(ops)
    init_line = line_of(src, "init_tensormap_from_atom(tma_atom_a")
    update_line = line_of(src, "manager.update_tensormap(")
    inits = [op for op in accesses if op.span.line in (init_line, init_line + 1)]
    # `with elect_one()`: the atom's descriptor is copied in by one lane.
    assert inits and all(op.write and bin(op.lanes).count("1") == 1 for op in inits)
    # update_tensormap: the whole warp edits the shared copies, then copies them out (reads).
    updates = [op for op in accesses if op.span.line == update_line]
    assert {op.write for op in updates} == {True, False}
    assert all(bin(op.lanes).count("1") > 1 for op in updates)
    assert any(isinstance(op, ir.BulkWait) and op.read_only for op in ops)


def test_other_warps_do_not_touch_the_descriptors():
    _, ops = _warp_ops(_source(), 2)
    assert not _smem_accesses(ops)


def test_reading_a_descriptor_before_the_barrier_races_with_its_initialisation(require_spin):
    src = _source(sync="pass")
    fr = api.check_source(src, "k.py", Settings(), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "counterexample"
    [f] = [f for f in kr.findings if f.code == "CS201"]
    lines = {f.span.line} | {r.span.line for r in f.related}
    assert line_of(src, "cp_fence_tma_desc_release(gdesc_a, desc_a)") in lines


def test_synchronized_descriptor_updates_verify(require_spin):
    fr = api.check_source(_source(), "k.py", Settings(), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "verified", kr.reason


def test_gmem_mode_initialisation_fence_is_a_cta_fence():
    src = _source(mode="GMEM")
    k, ops = _warp_ops(src, 0)
    assert not k.unmodeled
    fence_line = line_of(src, "fence_tensormap_initialization")
    assert any(isinstance(op, ir.Fence) and op.span.line == fence_line for op in ops)


def test_a_manager_warp_that_does_not_fold_is_unmodeled():
    src = _source().replace("init_tensormap_from_atom(tma_atom_a, desc_a, 0)",
                            "init_tensormap_from_atom(tma_atom_a, desc_a, mDesc[0])")
    k = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in k.unmodeled] == [
        ("TensorMapManager.init_tensormap_from_atom", line_of(src, "desc_a, mDesc[0])"))]
