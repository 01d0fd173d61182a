"""Per-thread partitions by the A- and C-operand tiled copies of warp-level tiled MMAs whose
warps tile M only: FlashAttention-2's epilogue (cuDNN's SM120 block-sparse attention) reads its Q
rows through `make_tiled_copy_A(ldmatrix, tiled_mma_qk)` and then writes its O rows into the same
storage through `make_tiled_copy_C(stmatrix, tiled_mma_pv)` with no barrier between: each warp
overwrites only the rows it read itself."""
import pytest

from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of


def epilogue(atoms: str = "(4, 1, 1)", pv_atoms: str = "", o_copy: str = "make_tiled_copy_C",
             permutation: str = "(64, 16, 16)", pv_permutation: str = "") -> str:
    """Four warps; sQ filled by every thread and published by a CTA barrier; each warp reads its
    Q rows through the A-operand copy of `tiled_mma_qk` and writes O over them through the
    `o_copy` copy of `tiled_mma_pv` (tiled by `pv_atoms`, by default the same `atoms`)."""
    return f'''\
import cutlass
import cutlass.cute as cute


class K:
    @cute.jit
    def __call__(self, mQ: cute.Tensor):
        tiled_mma_qk = cute.make_tiled_mma(
            cute.nvgpu.warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 16)),
            cute.make_layout({atoms}), permutation_mnk={permutation})
        tiled_mma_pv = cute.make_tiled_mma(
            cute.nvgpu.warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 16)),
            cute.make_layout({pv_atoms or atoms}), permutation_mnk={pv_permutation or permutation})
        self.kernel(mQ, tiled_mma_qk, tiled_mma_pv).launch(grid=(1, 1, 1), block=(128, 1, 1))

    @cute.kernel
    def kernel(self, mQ: cute.Tensor, tiled_mma_qk: cute.TiledMma, tiled_mma_pv: cute.TiledMma):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sQ = smem.allocate_tensor(cutlass.BFloat16, cute.make_layout((64, 64)), 16)
        tQsQ = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16),
                                       cute.make_layout(128), cute.make_layout(1)).get_slice(tidx).partition_D(sQ)
        tQsQ.fill(0.0)
        cute.arch.sync_threads()
        ldmatrix = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(False, 4), cutlass.BFloat16)
        tSsQ = cute.make_tiled_copy_A(ldmatrix, tiled_mma_qk).get_slice(tidx).partition_S(sQ)
        tSrQ = cute.make_rmem_tensor(tSsQ.shape, cutlass.BFloat16)
        cute.copy(ldmatrix, tSsQ, tSrQ)
        sO = cute.make_tensor(sQ.iterator, cute.make_layout((64, 64)))
        stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cutlass.BFloat16)
        tOsO = cute.{o_copy}(stmatrix, tiled_mma_pv).get_slice(tidx).partition_D(sO)
        cute.copy(stmatrix, tSrQ, tOsO)
        cute.arch.sync_threads()
        mQ[tidx] = sO[tidx, 0]
'''


def check(src: str):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def test_the_a_and_c_partitions_of_one_warp_row_tiling_give_each_warp_its_own_rows(require_spin):
    src = epilogue()
    assert not build_models(src, "k.py", Settings())[0].unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    assert any("tile M by 16 rows" in a and "taken to be its own rows" in a for a in r.assumptions), r.assumptions


@pytest.mark.parametrize("change", [
    {"atoms": "(2, 2, 1)", "permutation": "(32, 32, 16)"},  # warps tile N too: a warp's rows are not its own
    {"pv_atoms": "(2, 1, 1)", "pv_permutation": "(32, 16, 16)"},  # another row tiling: warp 1 writes warp 2's rows
    {"o_copy": "make_tiled_copy_B"},  # the B operand: every warp reads every row
], ids=["tiles-n", "other-row-tiling", "b-operand"])
def test_partitions_of_other_tilings_or_operands_still_race(require_spin, change):
    src = epilogue(**change)
    r = check(src)
    assert r.verdict == "counterexample", (change, r.verdict, r.reason)
    race = next(f for f in r.findings if f.code == "CS201")
    assert race.span.line in (line_of(src, "cute.copy(ldmatrix"), line_of(src, "cute.copy(stmatrix")), race.message
