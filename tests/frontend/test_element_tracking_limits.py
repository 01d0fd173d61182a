"""Per-lane element tracking in shared memory, and what happens past its limits.

A struct field viewed through a layout (`storage.scan.get_tensor(cute.make_layout((n, 2)))`,
cuDNN's HSTU scan) names elements by coordinate like an allocated tensor does, so two warps
writing their own rows of it do not conflict. The model keeps at most 16 element blocks, or 16
atoms of elements, per buffer; past that it merges them into one region. A race it then finds
may be between elements that differ on the GPU, so it is a possible race (inconclusive), never a
counterexample (P16).
"""
import pytest

from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source

SETTINGS = Settings(verify_fixes=False)

STRUCT_VIEW = """\
@cute.struct
class SharedStorage:
    scan: cute.struct.MemRange[cutlass.Int32, 130]

smem = cutlass.utils.SmemAllocator()
storage = smem.allocate(SharedStorage)
scan = storage.scan.get_tensor(cute.make_layout((65, 2)))
tidx, _, _ = cute.arch.thread_idx()
scan[tidx, 0] = 1
scan[tidx, 1] = 2
x = scan[READ, 0]
mA[tidx] = x
"""


def check(body: str, threads: int = 64):
    (k,) = api.check_source(kernel_source(body, threads=threads), "k.py", SETTINGS, with_fixes=False).kernels
    return k


def test_rows_of_a_struct_field_view_are_distinct_elements(require_spin):
    # Each thread reads back its own row: the warps' elements never meet.
    k = check(STRUCT_VIEW.replace("READ", "tidx"))
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_row_of_the_other_warp_read_without_a_barrier_is_a_counterexample(require_spin):
    k = check(STRUCT_VIEW.replace("READ", "63 - tidx"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


# Each warp writes its own elements, then reads one of them back, with no barrier: on the GPU
# the warps never meet. SIZE and STEPS set how many element sets the accesses name.
MANY_ATOMS = """\
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout((SIZE, 2)))
tidx, _, _ = cute.arch.thread_idx()
for s in cutlass.range_constexpr(STEPS):
    buf[tidx * STEPS + s, 0] = 1.0
mA[tidx] = buf[tidx * STEPS, 0]
"""
MANY_BLOCKS = """\
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(SIZE))
tidx, _, _ = cute.arch.thread_idx()
for s in cutlass.range_constexpr(STEPS):
    buf[tidx + 64 * s] = 1.0
mA[tidx] = buf[tidx]
"""


@pytest.mark.parametrize("body, size, steps", [
    (MANY_ATOMS, 256, 4),  # 2 warps x 4 steps = 8 element sets of one block, one atom each
    (MANY_BLOCKS, 512, 8),  # 16 blocks of 32 elements
])
def test_disjoint_elements_within_the_limits_are_verified(require_spin, body, size, steps):
    k = check(body.replace("SIZE", str(size)).replace("STEPS", str(steps)))
    assert k.verdict == "verified", (k.verdict, k.reason)


@pytest.mark.parametrize("body, size, steps", [
    (MANY_ATOMS, 640, 10),  # 20 element sets of one block: its atoms merge into one region
    (MANY_BLOCKS, 640, 10),  # 20 blocks: the buffer goes back to one region
])
def test_disjoint_elements_past_the_limits_are_a_possible_race_not_a_counterexample(require_spin, body, size,
                                                                                    steps):
    # In the merged region one warp's read meets the other's writes.
    k = check(body.replace("SIZE", str(size)).replace("STEPS", str(steps)))
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "more than the model keeps apart" in k.reason
    assert k.findings and all(f.code == "CS201" and f.possible for f in k.findings)
