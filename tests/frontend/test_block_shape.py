"""Blocks of several rows: `block=[16, 4, 1]` (quack's Hadamard transform launches
`[threads_per_transform, rows_per_block, 1]`). Warps are cut from the linear index x + 16 y, so
warp 0 holds rows 0 and 1 and warp 1 rows 2 and 3; thread_idx()[1] is each lane's row, not 0."""
from cutespin import api
from cutespin.config import Settings

SETTINGS = Settings(verify_fixes=False)

SOURCE = """\
import cutlass
import cutlass.cute as cute


class K:
    def __init__(self, rows):
        self.rows = rows

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=[16, ROWS, 1])

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        tx, ty, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
BODY
"""

ROW_ROLES = """\
        if ty >= 2:
            buf[tx] = 1.0
        if ty < 2:
            mA[tx] = buf[tx]
"""


def check(body: str, rows: str = "4"):
    src = SOURCE.replace("ROWS", rows).replace("BODY", body)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return k


def test_rows_of_different_warps_race_without_a_barrier(require_spin):
    # Rows 2-3 (warp 1) write what rows 0-1 (warp 0) read: no barrier between them.
    k = check(ROW_ROLES)
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"]


def test_rows_of_different_warps_ordered_by_a_barrier_are_verified(require_spin):
    k = check(ROW_ROLES.replace("        if ty < 2:", "        cute.arch.sync_threads()\n        if ty < 2:"))
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_block_dim_is_the_launch_shape(require_spin):
    # The last row (3, warp 1) writes what row 0 (warp 0) reads.
    k = check("""\
        last = cute.arch.block_dim()[1] - 1
        if ty == last:
            buf[tx] = 1.0
        if ty == 0:
            mA[tx] = buf[tx]
""")
    assert k.verdict == "counterexample", (k.verdict, k.reason)


def test_a_block_shape_that_does_not_fold_makes_the_indices_unknown(require_spin):
    k = check(ROW_ROLES, rows="self.rows")
    assert any("y or z extent that does not fold" in a for a in k.assumptions), k.assumptions
    assert k.verdict != "verified", (k.verdict, k.reason)
