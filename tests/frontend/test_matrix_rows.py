"""A matrix's leading coordinates name elements too (policy P9, *Matrix columns*).

cudnn's RMSNorm keeps its per-warp partial sums in a (2, warps) matrix double-buffered by row
parity: row r writes and reads `red[r % 2, ...]`, so the next row's writes go to the other half
and cannot clobber a slow warp's reads. `red[0, w]` and `red[1, w]` are different elements.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

ROW_REDUCE = """\
tidx, _, _ = cute.arch.thread_idx()
lane = cute.arch.lane_idx()
warp = cute.arch.warp_idx()
smem = cutlass.utils.SmemAllocator()
red = smem.allocate_tensor(cutlass.Float32, cute.make_ordered_layout((2, 4), order=(1, 0)))
for row in cutlass.range_constexpr(3):
    if lane == 0:
        red[{slot}, warp] = mA[row * 128 + tidx]
    cute.arch.barrier()
    total = cutlass.Float32(0.0)
    if lane < 4:
        total = red[{slot}, lane]
    mA[row * 128 + tidx] = total
"""


def check(slot: str):
    src = kernel_source(ROW_REDUCE.format(slot=slot), threads=128)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_a_reduction_double_buffered_by_row_parity_is_verified(require_spin):
    _, k = check("row % 2")
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])


def test_a_single_buffered_reduction_races_with_the_next_rows_writes(require_spin):
    # Without the parity a fast warp writes row 1's partial over row 0's while a slow warp reads it.
    src, k = check("0")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible
    assert {line_of(src, "red[0, warp] ="), line_of(src, "total = red[0, lane]")} <= {f.span.line} | {r.span.line for r in f.related}


def test_a_leading_coordinate_that_does_not_fold_makes_the_race_possible(require_spin):
    # `mA[0] % 2` is uniform but unknown: the rows may be the same, so the race found is possible only.
    _, k = check("(row + mA[0]) % 2")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and f.possible
